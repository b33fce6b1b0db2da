package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Issue 11: a tokenizer.json that is not the known Qwen3 file (truncated,
// edited, another model's) is refused unless allowed, and then reported as
// unverified; the real file loads and is verified.
func TestLoadVerified(t *testing.T) {
	qwen3(t) // skips (or fails under CI) when the file is absent
	path := qwen3Path()
	tok, err := LoadVerified(path, false)
	if err != nil || !tok.Verified() || tok.SHA256() != Qwen3SHA256 {
		t.Fatalf("the Qwen3 file: %v verified=%v", err, tok != nil && tok.Verified())
	}
	data, _ := os.ReadFile(path)
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.json")
	os.WriteFile(cut, data[:len(data)/2], 0o644)
	edited := filepath.Join(dir, "edited.json")
	e := append([]byte(nil), data...)
	e[len(e)/2] ^= 0x20 // one byte somewhere in the vocab
	os.WriteFile(edited, e, 0o644)
	for _, p := range []string{cut, edited} {
		if _, err := LoadVerified(p, false); !errors.Is(err, ErrUnknownFile) {
			t.Errorf("LoadVerified(%s) = %v, want ErrUnknownFile", p, err)
		}
	}
	// Allowed, an edited file loads (when it still parses) and says it is unverified.
	toy := filepath.Join(dir, "toy.json")
	os.WriteFile(toy, []byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}, "decoder": {"type": "ByteLevel"}}`), 0o644)
	if _, err := LoadVerified(toy, false); !errors.Is(err, ErrUnknownFile) {
		t.Errorf("toy without allowAny: %v", err)
	}
	tt, err := LoadVerified(toy, true)
	if err != nil {
		t.Fatalf("toy with allowAny: %v", err)
	}
	if tt.Verified() {
		t.Error("a toy tokenizer reports itself verified")
	}
}
