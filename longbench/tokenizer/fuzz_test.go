package tokenizer

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzEncode: decode(encode(s)) == NFC(s) for valid UTF-8, and the byte-level
// round trip holds for any bytes. Needs the Qwen3 tokenizer.json.
func FuzzEncode(f *testing.F) {
	for _, s := range handCorpus {
		f.Add(s)
	}
	f.Add("\xff\xfe\xe2\x82 <|im_start|\xc3")
	tk := qwen3(f)
	f.Fuzz(func(t *testing.T, s string) {
		ids := tk.Encode(s)
		if !utf8.ValidString(s) {
			// Invalid bytes pass through as byte tokens; NFC keeps them.
			if got, want := tk.decodeBytes(ids, false), roundTripWant(s); string(got) != want {
				t.Fatalf("%q: byte round trip %q, want %q", s, got, want)
			}
			return
		}
		if got, want := tk.Decode(ids, false), roundTripWant(s); got != want {
			t.Fatalf("%q: decode(encode) = %q, want %q", s, got, want)
		}
	})
}

// roundTripWant is NFC applied to the text between added tokens, which are
// matched before normalization (so NFC never joins across one).
func roundTripWant(s string) string {
	tk := qwenTok
	var b strings.Builder
	for _, seg := range tk.rawAdded.split(nil, s) {
		if seg.id >= 0 {
			b.WriteString(seg.text)
		} else {
			b.WriteString(norm.NFC.String(seg.text))
		}
	}
	return b.String()
}

// FuzzLoad: the tokenizer.json parser never panics.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"added_tokens":[{"id":5,"content":"<x>","special":true}],"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"}]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","use_regex":false}]},"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"\u0120":0},"merges":[["a","b"]]}}`))
	f.Add([]byte(`{"model":{"type":"WordPiece"}}`))
	f.Add([]byte(`{"a":"\ud800\u00e9\\"}`))
	f.Add([]byte(`[1,2,{"x":null}]`))
	f.Add([]byte(`{`))
	if data, err := os.ReadFile("testdata/tiny.json"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := FromJSON(data)
		if err != nil {
			return
		}
		ids := tk.Encode("a b ab\n<x>é")
		_ = tk.Decode(ids, true)
	})
}
