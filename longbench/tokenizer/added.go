package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json "added_tokens".
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedMatcher finds added tokens in text the way HF's AddedVocabulary does:
// an Aho-Corasick scan with leftmost-longest, non-overlapping matches, then
// the single_word filter and lstrip/rstrip widening on each match.
type addedMatcher struct {
	tokens []*addedToken
	// byFirst[b] lists indices into tokens whose pattern starts with byte b,
	// longest pattern first, so the first hit at a position is the longest.
	byFirst  [256][]int
	patterns []string // what is searched for: content, NFC'd when normalized
	oneFirst int      // the only first byte in use, or -1
}

func newAddedMatcher(tokens []*addedToken, patterns []string) *addedMatcher {
	if len(tokens) == 0 {
		return nil
	}
	m := &addedMatcher{tokens: tokens, patterns: patterns, oneFirst: -1}
	firsts := 0
	for i, p := range patterns {
		b := p[0]
		if len(m.byFirst[b]) == 0 {
			firsts++
			m.oneFirst = int(b)
		}
		m.byFirst[b] = append(m.byFirst[b], i)
	}
	if firsts != 1 {
		m.oneFirst = -1
	}
	for b := range m.byFirst {
		l := m.byFirst[b]
		// Stable: among equal patterns the first registered wins, as in HF.
		sort.SliceStable(l, func(x, y int) bool { return len(patterns[l[x]]) > len(patterns[l[y]]) })
	}
	return m
}

// segment is a piece of input: either an added token (id >= 0) or text.
type segment struct {
	text string
	id   int
}

// split cuts s into text segments and added-token segments, appending to dst.
// Empty text segments are dropped.
func (m *addedMatcher) split(dst []segment, s string) []segment {
	if m == nil {
		if s != "" {
			dst = append(dst, segment{text: s, id: -1})
		}
		return dst
	}
	startOffset := 0
	for i := 0; i < len(s); {
		// Jump to the next byte that can start a pattern.
		if m.oneFirst >= 0 {
			k := strings.IndexByte(s[i:], byte(m.oneFirst))
			if k < 0 {
				break
			}
			i += k
		} else if len(m.byFirst[s[i]]) == 0 {
			i++
			continue
		}
		hit := -1
		for _, t := range m.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], m.patterns[t]) {
				hit = t
				break
			}
		}
		if hit < 0 {
			i++
			continue
		}
		start, stop := i, i+len(m.patterns[hit])
		i = stop // the scan resumes after the raw match, whatever the filters do
		tok := m.tokens[hit]
		if tok.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.LStrip {
			start = max(start-trailingSpaceLen(s[:start]), startOffset)
		}
		if tok.RStrip {
			stop += leadingSpaceLen(s[stop:])
		}
		if startOffset < start {
			dst = append(dst, segment{text: s[startOffset:start], id: -1})
		}
		dst = append(dst, segment{text: s[start:stop], id: tok.ID})
		startOffset = stop
	}
	if startOffset < len(s) {
		dst = append(dst, segment{text: s[startOffset:], id: -1})
	}
	return dst
}

// isWordChar is Rust regex's Unicode \w: Alphabetic, marks, decimal digits,
// connector punctuation and Join_Control.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Pc, r) ||
		unicode.Is(unicode.Other_Alphabetic, r) || r == 0x200C || r == 0x200D
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWordChar(r)
}

// trailingSpaceLen is the byte length of the White_Space suffix of s.
func trailingSpaceLen(s string) int {
	n := 0
	for n < len(s) {
		r, w := utf8.DecodeLastRuneInString(s[:len(s)-n])
		if !unicode.IsSpace(r) {
			break
		}
		n += w
	}
	return n
}

// leadingSpaceLen is the byte length of the White_Space prefix of s.
func leadingSpaceLen(s string) int {
	n := 0
	for n < len(s) {
		r, w := utf8.DecodeRuneInString(s[n:])
		if !unicode.IsSpace(r) {
			break
		}
		n += w
	}
	return n
}
