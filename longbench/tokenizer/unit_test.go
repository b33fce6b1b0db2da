package tokenizer

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLossyUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"é中😀", "é中😀"},
		{"\xff", "\uFFFD"},
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82", "\uFFFD"},                 // truncated 3-byte sequence: one U+FFFD
		{"\xe2\x82x", "\uFFFDx"},               // same, then ASCII
		{"\xf0\x9f\x98", "\uFFFD"},             // truncated 4-byte sequence
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate: ED then A0 is not allowed
		{"\xc0\xaf", "\uFFFD\uFFFD"},           // overlong
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
	}
	for _, tt := range tests {
		if got := string(appendLossyUTF8(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestByteLevelTable(t *testing.T) {
	seen := map[rune]bool{}
	for b := 0; b < 256; b++ {
		r := byteToRune[b]
		if seen[r] {
			t.Fatalf("byte %#x maps to %U twice", b, r)
		}
		seen[r] = true
		if got := appendByteLevelDecode(nil, string(r)); len(got) != 1 || got[0] != byte(b) {
			t.Fatalf("byte %#x: round trip gives %v", b, got)
		}
	}
	if byteToRune[' '] != 'Ġ' || byteToRune['\n'] != 'Ċ' {
		t.Fatalf("space -> %q, newline -> %q; want Ġ, Ċ", byteToRune[' '], byteToRune['\n'])
	}
}

// TestMergeHeapMatchesScan checks the two BPE merge loops agree on random
// words, including long ones of few distinct bytes (many equal-rank ties).
func TestMergeHeapMatchesScan(t *testing.T) {
	tk := qwen3(t)
	r := rand.New(rand.NewPCG(5, 6))
	alphabets := []string{"ab", " =", "abcdefgh ", "\t\n ", "的是了", "😀a"}
	for i := range 2000 {
		al := alphabets[i%len(alphabets)]
		var b strings.Builder
		for range 1 + r.IntN(200) {
			b.WriteByte(al[r.IntN(len(al))])
		}
		w := b.String()
		scan := tk.model.mergeScan(tk.model.initialSymbols(w))
		hp := tk.model.mergeHeap(tk.model.initialSymbols(w))
		if !slices.Equal(scan, hp) {
			t.Fatalf("%q: scan %v, heap %v", w, scan, hp)
		}
	}
}

func TestAPI(t *testing.T) {
	tk := qwen3(t)
	if got := tk.VocabSize(); got != 151669 {
		t.Errorf("VocabSize %d, want 151669", got)
	}
	for _, tt := range []struct {
		tok string
		id  int
	}{{"<|im_start|>", 151644}, {"<think>", 151667}, {"Ġworld", 1879}, {"Hello", 9707}} {
		if id, ok := tk.TokenID(tt.tok); !ok || id != tt.id {
			t.Errorf("TokenID(%q) = %d, %v; want %d", tt.tok, id, ok, tt.id)
		}
	}
	if _, ok := tk.TokenID("no such token ever"); ok {
		t.Error("TokenID found a missing token")
	}
	ids := tk.Encode("<|im_start|>user\nhi<|im_end|><think>x</think>")
	if got := tk.Decode(ids, true); got != "user\nhi<think>x</think>" {
		t.Errorf("Decode(skipSpecial) = %q (think tags are added but not special)", got)
	}
	if got := tk.Decode([]int{-1, 9707, 1 << 30, 151700}, false); got != "Hello" {
		t.Errorf("unknown ids: Decode = %q, want %q", got, "Hello")
	}
	// A byte-level token that is half of a UTF-8 sequence decodes lossily.
	half := tk.Encode("中")
	if got := tk.Decode(half[:1], false); len(half) == 2 && got != "\uFFFD" {
		t.Errorf("half of 中: %q", got)
	}
}

// TestInvalidUTF8 documents the behaviour on invalid input: raw bytes pass
// through as byte tokens (so Count reflects the bytes), and Decode, like
// HF, repairs them to U+FFFD.
func TestInvalidUTF8(t *testing.T) {
	tk := qwen3(t)
	s := "ok \xff\xfe bytes \xe2\x82"
	ids := tk.Encode(s)
	if got := tk.decodeBytes(ids, false); string(got) != s {
		t.Errorf("byte round trip: %q, want %q", got, s)
	}
	// One U+FFFD per maximal invalid subpart: \xff and \xfe each get one,
	// the truncated \xe2\x82 one.
	if got, want := tk.Decode(ids, false), "ok \uFFFD\uFFFD bytes \uFFFD"; got != want {
		t.Errorf("Decode = %q, want %q", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	const good = `{"added_tokens":[],"normalizer":null,
"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},
"post_processor":null,"decoder":{"type":"ByteLevel"},
"model":{"type":"BPE","vocab":%VOCAB%,"merges":["a b"]}}`
	tests := []struct {
		name    string
		json    string
		wantErr error
	}{
		{"not json", `{"model":`, ErrFormat},
		{"trailing", `{} x`, ErrFormat},
		{"no model", `{}`, ErrFormat},
		{"wordpiece", `{"model":{"type":"WordPiece","vocab":{}},"pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"}}`, ErrUnsupported},
		{"unigram", strings.Replace(good, `"type":"BPE"`, `"type":"Unigram"`, 1), ErrUnsupported},
		{"nfkc", strings.Replace(good, `"normalizer":null`, `"normalizer":{"type":"NFKC"}`, 1), ErrUnsupported},
		{"lowercase in sequence", strings.Replace(good, `"normalizer":null`, `"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Lowercase"}]}`, 1), ErrUnsupported},
		{"metaspace", strings.Replace(good, `"type":"ByteLevel","add_prefix_space":false,"use_regex":true`, `"type":"Metaspace"`, 1), ErrUnsupported},
		{"wordpiece decoder", strings.Replace(good, `"decoder":{"type":"ByteLevel"}`, `"decoder":{"type":"WordPiece"}`, 1), ErrUnsupported},
		{"dropout", strings.Replace(good, `"type":"BPE"`, `"type":"BPE","dropout":0.1`, 1), ErrUnsupported},
		{"merge not in vocab", strings.Replace(good, `"a b"`, `"a zz"`, 1), ErrFormat},
		{"bad merge", strings.Replace(good, `"a b"`, `"ab"`, 1), ErrFormat},
		{"bad id", strings.Replace(good, `"type":"BPE","vocab":%VOCAB%`, `"type":"BPE","vocab":{"a":-1}`, 1), ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromJSON([]byte(strings.Replace(tt.json, "%VOCAB%", tinyVocab(), 1)))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "tokenizer.json") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	if _, err := Load("testdata/does-not-exist.json"); err == nil || !strings.Contains(err.Error(), "does-not-exist.json") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// tinyVocab is a byte-level vocab of all 256 byte characters plus "ab".
func tinyVocab() string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 256; i++ {
		b.WriteString(quoteJSON(string(byteToRune[i])) + ":" + strconv.Itoa(i) + ",")
	}
	b.WriteString(`"ab":256}`)
	return b.String()
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestTinyTokenizer exercises a hand-made byte-level BPE with the GPT-2
// regex inside ByteLevel, merges in pair form, and added-token flags.
func TestTinyTokenizer(t *testing.T) {
	js := `{"added_tokens":[
  {"id":300,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
  {"id":301,"content":"[L]","single_word":false,"lstrip":true,"rstrip":false,"normalized":false,"special":false},
  {"id":302,"content":"[R]","single_word":false,"lstrip":false,"rstrip":true,"normalized":false,"special":false},
  {"id":303,"content":"ww","single_word":true,"lstrip":false,"rstrip":false,"normalized":false,"special":false},
  {"id":304,"content":"éé","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false}],
"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"}]},
"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},
"post_processor":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"},
"model":{"type":"BPE","vocab":` + tinyVocab() + `,"merges":[["a","b"]]}}`
	tk, err := FromJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want []int
	}{
		{"ab", []int{256}},
		{"aab", []int{'a', 256}},
		{"<s>ab", []int{300, 256}},
		{"a  [L]b", []int{'a', 301, 'b'}},                       // lstrip swallows the spaces before
		{"a[R]  b", []int{'a', 302, 'b'}},                       // rstrip swallows the spaces after
		{"ww xww ww", []int{303, ' ', 'x', 'w', 'w', ' ', 303}}, // single_word: not inside "xww"
		{"e\u0301e\u0301", []int{304}},                          // normalized token matched after NFC
		{"w", []int{'w'}},
		{"\u00e9", []int{0xc3, 0xa9}}, // no merges: the two UTF-8 bytes of é
	}
	// Byte ids in tinyVocab equal the byte values.
	for _, tt := range tests {
		if got := tk.Encode(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Encode(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if got := tk.Decode([]int{300, 256, 301}, true); got != "ab[L]" {
		t.Errorf("Decode = %q", got)
	}
	if !utf8.ValidString(tk.Decode([]int{0xc3}, false)) {
		t.Error("Decode returned invalid UTF-8")
	}
}
