package tokenizer

import "unicode"

// Go's unicode tables are Unicode 15.0; HF tokenizers' Oniguruma is on
// Unicode 16.0, which assigned these letters (\p{L}) and numbers (\p{N}).
// The ranges were measured, not copied: every scalar value was run through
// HF's own Split pre-tokenizer (testdata/jsref/encode.mjs --impl hf
// --pretokenize) and its class compared with Go's; these are all the
// differences (5004 code points, all of class "other" in Go). Whitespace
// agreed everywhere. TestQwenSplitterMatchesHF re-checks them.

var unicode16Letters = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x1C89, 0x1C8A, 1},
		{0xA7CB, 0xA7CD, 1},
		{0xA7DA, 0xA7DC, 1},
	},
	R32: []unicode.Range32{
		{0x105C0, 0x105F3, 1},
		{0x10D4A, 0x10D65, 1},
		{0x10D6F, 0x10D85, 1},
		{0x10EC2, 0x10EC4, 1},
		{0x11380, 0x11389, 1},
		{0x1138B, 0x1138B, 1},
		{0x1138E, 0x1138E, 1},
		{0x11390, 0x113B5, 1},
		{0x113B7, 0x113B7, 1},
		{0x113D1, 0x113D1, 1},
		{0x113D3, 0x113D3, 1},
		{0x11BC0, 0x11BE0, 1},
		{0x13460, 0x143FA, 1},
		{0x16100, 0x1611D, 1},
		{0x16D40, 0x16D6C, 1},
		{0x18CFF, 0x18CFF, 1},
		{0x1E5D0, 0x1E5ED, 1},
		{0x1E5F0, 0x1E5F0, 1},
		{0x2EBF0, 0x2EE5D, 1},
	},
}

var unicode16Numbers = &unicode.RangeTable{
	R32: []unicode.Range32{
		{0x10D40, 0x10D49, 1},
		{0x116D0, 0x116E3, 1},
		{0x11BF0, 0x11BF9, 1},
		{0x16130, 0x16139, 1},
		{0x16D70, 0x16D79, 1},
		{0x1CCF0, 0x1CCF9, 1},
		{0x1E5F1, 0x1E5FA, 1},
	},
}
