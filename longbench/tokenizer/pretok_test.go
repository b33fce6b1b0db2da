package tokenizer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func splitAll(s splitter, text string) []string {
	var out []string
	s.split(text, func(p string) { out = append(out, p) })
	return out
}

var qwenRegexp2 = func() *regexSplitter {
	rs, err := newRegexSplitter(qwenPattern)
	if err != nil {
		panic(err)
	}
	return rs
}()

// checkSplitAgainstRegexp2 compares the hand-written matcher (without the
// Oniguruma-only ſ folding) with regexp2 on one text.
func checkSplitAgainstRegexp2(t *testing.T, text string) {
	t.Helper()
	got := splitAll(qwenSplitter{}, text)
	want := splitAll(qwenRegexp2, text)
	if !slices.Equal(got, want) {
		t.Fatalf("%q:\n hand    %q\n regexp2 %q", text, got, want)
	}
	if strings.Join(got, "") != text {
		t.Fatalf("%q: pieces do not tile the input", text)
	}
}

func TestQwenSplitterMatchesRegexp2(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 500
	}
	texts := append(slices.Clone(handCorpus), randomCorpus(3, n, 40, append(slices.Clone(corpusAlphabet), hfOnlyAlphabet...))...)
	texts = append(texts, "\xff\xfe invalid \xc3 bytes \xe2\x82", "a'\xc5", "'\xc5\xbf")
	for _, s := range texts {
		checkSplitAgainstRegexp2(t, s)
	}
}

func TestQwenSplitterOnRecords(t *testing.T) {
	dir := sharedData(t)
	for _, sub := range subsets {
		for _, r := range readJSONL[longbenchRecord](t, filepath.Join(dir, sub+".jsonl")) {
			checkSplitAgainstRegexp2(t, r.Context)
		}
	}
}

func TestQwenSplitterCases(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"it's", []string{"it", "'s"}},
		{"IT'S", []string{"IT", "'S"}},
		{"a'ſt", []string{"a", "'ſ", "t"}}, // Oniguruma case folding
		{"12345", []string{"1", "2", "3", "4", "5"}},
		{"a  b", []string{"a", " ", " b"}},
		{"a \n\n b", []string{"a", " \n\n", " b"}},
		{"x   ", []string{"x", "   "}},
		{"\t\tx", []string{"\t", "\tx"}},
		{" !!\n\nx", []string{" !!\n\n", "x"}},
		{"(foo", []string{"(foo"}},
		{"x\u0085\u0085y", []string{"x", "\u0085", "\u0085y"}},
		{"x \ufeffz", []string{"x", " \ufeff", "z"}},
	}
	for _, tt := range tests {
		if got := splitAll(qwenSplitter{onig: true}, tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// probeRunes lists the scalar values the HF probe covers: all below U+0800,
// the General Punctuation block (most space characters), U+3000, every
// Unicode 16 addition and every 97th value. The full sweep over all of
// Unicode that produced unicode16.go took minutes.
func probeRunes() []rune {
	var out []rune
	for r := rune(0x80); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if r < 0x800 || (r >= 0x2000 && r < 0x2070) || r == 0x3000 || r%97 == 0 || unicode.Is(unicode16Letters, r) || unicode.Is(unicode16Numbers, r) {
			out = append(out, r)
		}
	}
	return out
}

// TestQwenSplitterMatchesHF compares with HF's own Split pre-tokenizer on
// probe strings that put each probed character in several contexts, so any
// disagreement about \s, \p{L} or \p{N} shows.
func TestQwenSplitterMatchesHF(t *testing.T) {
	if testing.Short() {
		t.Skip("probes Unicode through node; skipped in -short")
	}
	var texts []string
	var b strings.Builder
	for _, r := range probeRunes() {
		c := string(r)
		// Letters, numbers, spaces and others each split this differently.
		b.WriteString("1" + c + c + c + "1a" + c + " " + c + "x'" + c + "\n")
		if b.Len() > 1<<12 {
			texts = append(texts, b.String())
			b.Reset()
		}
	}
	texts = append(texts, b.String())
	texts = append(texts, handCorpus...)
	texts = append(texts, randomCorpus(4, 500, 40, append(slices.Clone(corpusAlphabet), hfOnlyAlphabet...))...)
	var want [][]string
	nodeRef(t, "hf", texts, &want, "--pretokenize")
	bad := 0
	for i, s := range texts {
		got := splitAll(qwenSplitter{onig: true}, s)
		if !slices.Equal(got, want[i]) {
			k := 0
			for k < min(len(got), len(want[i])) && got[k] == want[i][k] {
				k++
			}
			t.Errorf("text %d: first difference at piece %d: got %q, HF %q", i, k,
				got[k:min(len(got), k+3)], want[i][k:min(len(want[i]), k+3)])
			if bad++; bad > 10 {
				t.FailNow()
			}
		}
	}
	t.Logf("%d probe texts, %d differing", len(texts), bad)
}

func FuzzQwenSplitter(f *testing.F) {
	for _, s := range handCorpus {
		f.Add(s)
	}
	f.Add("\xff'\xc5\xbf \r\n\t")
	f.Fuzz(func(t *testing.T, s string) {
		checkSplitAgainstRegexp2(t, s)
	})
}
