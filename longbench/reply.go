package longbench

import (
	"fmt"
	"strings"
	"sync"
)

// replyUnits are the strings tried, in order, to build a reply text of a
// given token count: one that is a single token and whose repetition k
// times encodes to exactly k tokens. For Qwen3's byte-level BPE " the" is
// one token and its pre-tokenizer keeps each " the" apart.
var replyUnits = []string{" the", " a", " x", "a", "x", " "}

// Replies makes reply texts that encode to an exact number of tokens: the
// assistant turn of SGLang's custom format and ShareGPT's "gpt" turn, from
// which those loaders take a request's output length
// (len(tokenizer.encode(reply))).
type Replies struct {
	tok  Tokenizer
	mu   sync.Mutex
	unit string
	memo map[int]string
}

// NewReplies returns a reply maker for tok.
func NewReplies(tok Tokenizer) *Replies { return &Replies{tok: tok, memo: map[int]string{}} }

// Text returns a string that tok encodes to exactly n tokens (n > 0),
// checked by encoding it; ErrTokenizer when no unit repeats cleanly.
func (r *Replies) Text(n int) (string, error) {
	if n <= 0 {
		return "", fmt.Errorf("longbench: reply of %d tokens: %w", n, ErrOptions)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.memo[n]; ok {
		return s, nil
	}
	units := replyUnits
	if r.unit != "" {
		units = append([]string{r.unit}, replyUnits...)
	}
	for _, u := range units {
		if len(r.tok.Encode(u)) != 1 {
			continue
		}
		s := strings.Repeat(u, n)
		if len(r.tok.Encode(s)) == n {
			r.unit = u
			r.memo[n] = s
			return s, nil
		}
	}
	return "", fmt.Errorf("longbench: no reply text of exactly %d tokens (tried %q): %w", n, replyUnits, ErrTokenizer)
}
