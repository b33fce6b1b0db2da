package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"golang.org/x/text/unicode/norm"

	"github.com/goldset/goldset/internal/safefile"
)

var (
	// ErrFormat: tokenizer.json is not valid JSON or is inconsistent.
	ErrFormat = errors.New("malformed tokenizer.json")
	// ErrUnsupported: the file uses a component or option this package
	// does not implement; the error names it.
	ErrUnsupported = errors.New("unsupported")
)

// Decode-table kinds of an id.
const (
	kindNone    = iota // id not assigned
	kindModel          // model vocab token
	kindAdded          // added token, not special
	kindSpecial        // added token with special=true
)

// Tokenizer is a loaded byte-level BPE tokenizer. It is immutable after
// loading except for an internal word cache, and safe for concurrent use.
type Tokenizer struct {
	sha256 string

	nfc       bool
	rawAdded  *addedMatcher // added tokens with normalized=false
	normAdded *addedMatcher // added tokens with normalized=true
	pre       []preStep
	model     *bpeModel

	added     map[string]int
	addedByID map[int]*addedToken

	vocabSize int
	decKind   []uint8
	decOff    []uint32
	decArena  []byte
}

// Load reads and parses a Hugging Face tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, err := safefile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return load(path, data)
}

// FromJSON parses tokenizer.json content.
func FromJSON(data []byte) (*Tokenizer, error) {
	return load("tokenizer.json (in memory)", data)
}

func load(name string, data []byte) (*Tokenizer, error) {
	t, err := parse(name, data)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	t.sha256 = hex.EncodeToString(sum[:])
	return t, nil
}

// SHA256 is the hex sha256 of the tokenizer.json bytes that were loaded.
func (t *Tokenizer) SHA256() string { return t.sha256 }

// VocabSize is one more than the largest id of the model vocab and the added
// tokens (151669 for Qwen3; the model's embedding table may be padded larger).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID returns the id of a token string: an added token's content, or a
// model vocab entry in its byte-level form (e.g. "Ġthe").
func (t *Tokenizer) TokenID(s string) (int, bool) {
	if id, ok := t.added[s]; ok {
		return id, true
	}
	id, ok := t.model.vocab[s]
	return id, ok
}

// Encode returns the ids of text as HF tokenizers' encode(text,
// add_special_tokens=False) would: added/special tokens that occur in the
// text map to their ids, and nothing is prepended or appended.
func (t *Tokenizer) Encode(text string) []int {
	return t.appendEncode(make([]int, 0, len(text)/3+1), text)
}

// Count returns len(Encode(text)).
func (t *Tokenizer) Count(text string) int {
	return len(t.Encode(text))
}

func (t *Tokenizer) appendEncode(dst []int, text string) []int {
	var segBuf [16]segment
	for _, seg := range t.rawAdded.split(segBuf[:0], text) {
		if seg.id >= 0 {
			dst = append(dst, seg.id)
			continue
		}
		s := seg.text
		if t.nfc && !norm.NFC.IsNormalString(s) {
			s = norm.NFC.String(s)
		}
		if t.normAdded == nil {
			dst = t.appendPreTokenized(dst, s)
			continue
		}
		var segBuf2 [16]segment
		for _, seg2 := range t.normAdded.split(segBuf2[:0], s) {
			if seg2.id >= 0 {
				dst = append(dst, seg2.id)
			} else {
				dst = t.appendPreTokenized(dst, seg2.text)
			}
		}
	}
	return dst
}

// appendPreTokenized runs the pre-tokenizer stages on s, then BPE.
func (t *Tokenizer) appendPreTokenized(dst []int, s string) []int {
	// Fast path, Qwen's layout: hand-written Split, then a plain ByteLevel.
	if q, ok := t.pre[0].split.(qwenSplitter); ok && len(t.pre) == 2 &&
		t.pre[1].split == nil && !t.pre[1].addPrefixSpace && !t.pre[0].addPrefixSpace {
		for i := 0; i < len(s); {
			j := q.next(s, i)
			dst = t.model.appendWord(dst, s[i:j])
			i = j
		}
		return dst
	}
	pieces := []string{s}
	var next []string
	for _, st := range t.pre {
		next = next[:0]
		for _, p := range pieces {
			if st.addPrefixSpace && (len(p) == 0 || p[0] != ' ') {
				p = " " + p
			}
			if st.split == nil {
				next = append(next, p)
				continue
			}
			st.split.split(p, func(piece string) { next = append(next, piece) })
		}
		pieces, next = next, pieces
	}
	for _, p := range pieces {
		dst = t.model.appendWord(dst, p)
	}
	return dst
}

// Decode turns ids back into text as HF tokenizers' decode does: unknown ids
// are dropped, special tokens are dropped when skipSpecial, tokens are mapped
// back to bytes, and invalid UTF-8 becomes U+FFFD (one per maximal invalid
// subpart, as Rust's from_utf8_lossy does).
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	return string(appendLossyUTF8(nil, t.decodeBytes(ids, skipSpecial)))
}

// decodeBytes is Decode before the UTF-8 repair.
func (t *Tokenizer) decodeBytes(ids []int, skipSpecial bool) []byte {
	out := make([]byte, 0, len(ids)*4)
	for _, id := range ids {
		if id < 0 || id >= t.vocabSize {
			continue
		}
		switch t.decKind[id] {
		case kindNone:
			continue
		case kindSpecial:
			if skipSpecial {
				continue
			}
		}
		out = append(out, t.decArena[t.decOff[id]:t.decOff[id+1]]...)
	}
	return out
}
