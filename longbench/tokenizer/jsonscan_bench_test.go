package tokenizer

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
)

// handVocabMerges reads the vocab and merges as parse does.
func handVocabMerges(data []byte) (map[string]int, map[uint64]uint64, error) {
	top, _, err := rawFields(data, 0)
	if err != nil {
		return nil, nil, err
	}
	model, _, err := rawFields(top["model"], 0)
	if err != nil {
		return nil, nil, err
	}
	vocab, err := parseVocab(model["vocab"])
	if err != nil {
		return nil, nil, err
	}
	merges, err := parseMerges(model["merges"], vocab)
	return vocab, merges, err
}

// benchJSON times f on Qwen3's tokenizer.json.
func benchJSON(b *testing.B, f func([]byte) (map[string]int, map[uint64]uint64, error)) {
	benchQwen3File(b, func(data []byte) error { _, _, err := f(data); return err })
}

// BenchmarkVocabMergesScanner and BenchmarkVocabMergesEncodingJSON time
// reading Qwen3's vocab and merges with this package's scanner and with
// encoding/json (the numbers behind jsonscan.go's comment).
func BenchmarkVocabMergesScanner(b *testing.B)      { benchJSON(b, handVocabMerges) }
func BenchmarkVocabMergesEncodingJSON(b *testing.B) { benchJSON(b, stdVocabMerges) }

// TestScannerAgreesWithEncodingJSON reads Qwen3's vocab and merges with the
// scanner and with encoding/json: both must give the same maps.
func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	qwen3(t) // skips when absent
	data, err := os.ReadFile(qwen3Path())
	if err != nil {
		t.Fatal(err)
	}
	v1, m1, err := handVocabMerges(data)
	if err != nil {
		t.Fatal(err)
	}
	v2, m2, err := stdVocabMerges(data)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(v1, v2) {
		t.Errorf("vocab: scanner %d entries, encoding/json %d, or different ids", len(v1), len(v2))
	}
	if !maps.Equal(m1, m2) {
		t.Errorf("merges: scanner %d entries, encoding/json %d, or different ranks", len(m1), len(m2))
	}
	t.Logf("%d vocab entries, %d merges", len(v1), len(m1))
}

// mergesStd decodes merges given as "a b" strings or as ["a", "b"] pairs.
type mergesStd [][2]string

func (m *mergesStd) UnmarshalJSON(b []byte) error {
	var ss []string
	if err := json.Unmarshal(b, &ss); err == nil {
		*m = make([][2]string, len(ss))
		for i, s := range ss {
			a, c, ok := strings.Cut(s, " ")
			if !ok {
				return fmt.Errorf("bad merge")
			}
			(*m)[i] = [2]string{a, c}
		}
		return nil
	}
	var p [][2]string
	err := json.Unmarshal(b, &p)
	*m = p
	return err
}

// stdVocabMerges is the encoding/json twin of handVocabMerges (one typed
// Unmarshal, the fastest encoding/json form tried; a map-based one, which
// keeps exact key matching, took ~520 cpu-ms).
func stdVocabMerges(data []byte) (map[string]int, map[uint64]uint64, error) {
	var f struct {
		AddedTokens   json.RawMessage `json:"added_tokens"`
		Normalizer    json.RawMessage `json:"normalizer"`
		PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Decoder       json.RawMessage `json:"decoder"`
		Model         struct {
			Type   string         `json:"type"`
			Vocab  map[string]int `json:"vocab"`
			Merges mergesStd      `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, err
	}
	vocab := f.Model.Vocab
	merges := make(map[uint64]uint64, len(vocab))
	for rank, p := range f.Model.Merges {
		ia, okA := vocab[p[0]]
		ib, okB := vocab[p[1]]
		ic, okC := vocab[p[0]+p[1]]
		if !okA || !okB || !okC {
			return nil, nil, fmt.Errorf("merge not in vocab")
		}
		merges[uint64(uint32(ia))<<32|uint64(uint32(ib))] = uint64(rank)<<32 | uint64(uint32(ic))
	}
	return vocab, merges, nil
}
