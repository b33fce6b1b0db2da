package tokenizer

import (
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// splitter cuts a string into consecutive, non-empty pieces that cover it
// exactly (HF Split with behavior Isolated: matches and the gaps between them
// are both pieces).
type splitter interface {
	split(s string, emit func(piece string))
}

// qwenPattern is the Split regex of Qwen2, Qwen2.5 and Qwen3 tokenizer.json
// files. It is recognised verbatim and served by qwenSplitter.
const qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// gpt2Pattern is the regex ByteLevel applies when use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// regexSplitter is the general fallback: any pattern regexp2 can compile.
// regexp2 works on runes, so an invalid UTF-8 byte counts as one U+FFFD rune.
type regexSplitter struct {
	re *regexp2.Regexp
}

func newRegexSplitter(pattern string) (*regexSplitter, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, err
	}
	return &regexSplitter{re: re}, nil
}

func (r *regexSplitter) split(s string, emit func(string)) {
	if s == "" {
		return
	}
	runes := []rune(s)
	// off[k] is the byte offset of rune k; []rune turns each invalid byte
	// into one rune, exactly as DecodeRuneInString steps.
	off := make([]int, len(runes)+1)
	for k, i := 0, 0; k < len(runes); k++ {
		off[k] = i
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	off[len(runes)] = len(s)
	prev := 0
	m, err := r.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		start, end := m.Index, m.Index+m.Length
		if end > start {
			if start > prev {
				emit(s[off[prev]:off[start]])
			}
			emit(s[off[start]:off[end]])
			prev = end
		}
		m, err = r.re.FindNextMatch(m)
	}
	if prev < len(runes) {
		emit(s[off[prev]:])
	}
}

// Character classes of qwenPattern. Whitespace is split into CR/LF and the
// rest because the pattern treats [\r\n] specially.
const (
	clsOther = iota // not \s, \p{L}, \p{N}
	clsLetter
	clsNumber
	clsSpace // \s other than \r, \n
	clsNewline
)

var asciiClass [utf8.RuneSelf]uint8

func init() {
	for c := 0; c < utf8.RuneSelf; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			asciiClass[c] = clsLetter
		case c >= '0' && c <= '9':
			asciiClass[c] = clsNumber
		case c == '\r' || c == '\n':
			asciiClass[c] = clsNewline
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			asciiClass[c] = clsSpace
		}
	}
}

// classAt returns the class and byte width of the rune at s[i:]. An invalid
// byte is U+FFFD (class other), width 1.
func (q qwenSplitter) classAt(s string, i int) (uint8, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return clsLetter, size
	case unicode.IsNumber(r):
		return clsNumber, size
	case unicode.IsSpace(r): // White_Space: same set as Oniguruma's and .NET's \s
		return clsSpace, size
	case q.onig && unicode.Is(unicode16Letters, r):
		return clsLetter, size
	case q.onig && unicode.Is(unicode16Numbers, r):
		return clsNumber, size
	}
	return clsOther, size
}

// qwenSplitter is a hand-written matcher for qwenPattern with the semantics
// of a backtracking engine (first alternative that matches, greedy
// quantifiers). Verified against regexp2 by tests and fuzzing.
type qwenSplitter struct {
	// onig matches HF's Oniguruma where it differs from regexp2:
	// (?i:'s) also matches "'ſ" (U+017F) by Unicode case folding, and the
	// letters and numbers new in Unicode 16 (unicode16.go) count as such.
	onig bool
}

func (q qwenSplitter) split(s string, emit func(string)) {
	for i := 0; i < len(s); {
		j := q.next(s, i)
		emit(s[i:j])
		i = j
	}
}

// next returns the end of the match that starts at i (i < len(s)). Every
// character starts a match, so matches tile the string.
func (q qwenSplitter) next(s string, i int) int {
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] | 0x20 {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2]|0x20 == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2]|0x20 == 'l' {
				return i + 3
			}
		}
		// s[i+1]|0x20 maps 0xC5 to 0xE5, so test the raw bytes of U+017F.
		if q.onig && i+2 < len(s) && s[i+1] == 0xC5 && s[i+2] == 0xBF {
			return i + 3
		}
	}
	cls, size := q.classAt(s, i)
	switch cls {
	case clsLetter: // [^\r\n\p{L}\p{N}]?\p{L}+ with the optional part empty
		return q.scanClass(s, i+size, clsLetter)
	case clsNumber: // \p{N}
		return i + size
	case clsOther:
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if j := i + size; j < len(s) {
			if c, _ := q.classAt(s, j); c == clsLetter {
				return q.scanClass(s, j, clsLetter)
			}
		}
		// ?[^\s\p{L}\p{N}]+[\r\n]*
		return scanNewlines(s, q.scanClass(s, i+size, clsOther))
	}
	// cls is whitespace.
	if cls == clsSpace && i+size < len(s) {
		c, _ := q.classAt(s, i+size)
		if c == clsLetter { // [^\r\n\p{L}\p{N}]?\p{L}+
			return q.scanClass(s, i+size, clsLetter)
		}
		if c == clsOther && s[i] == ' ' { //  ?[^\s\p{L}\p{N}]+[\r\n]*
			return scanNewlines(s, q.scanClass(s, i+1, clsOther))
		}
	}
	// Whitespace run [i, end); lastNL is the end of its last \r or \n,
	// lastStart the start of its last rune.
	end, lastNL, lastStart := i, -1, i
	for end < len(s) {
		c, w := q.classAt(s, end)
		if c != clsSpace && c != clsNewline {
			break
		}
		if c == clsNewline {
			lastNL = end + w
		}
		lastStart = end
		end += w
	}
	switch {
	case lastNL >= 0: // \s*[\r\n]+
		return lastNL
	case end == len(s): // \s+(?!\S) at the end of input
		return end
	case lastStart > i: // \s+(?!\S): give back the last space
		return lastStart
	}
	return end // \s+
}

// scanClass returns the end of the run of class cls that starts at j.
func (q qwenSplitter) scanClass(s string, j int, cls uint8) int {
	for j < len(s) {
		c, w := q.classAt(s, j)
		if c != cls {
			break
		}
		j += w
	}
	return j
}

func scanNewlines(s string, j int) int {
	for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
		j++
	}
	return j
}
