package longbench

import (
	"github.com/goldset/goldset/internal/testenv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// byteTok is a toy tokenizer: each byte is a token (id = byte value), and the
// Qwen3 control strings are single tokens. Like Hugging Face tokenizers it
// matches special-token text inside Encode's input, drops only "special"
// tokens when skipSpecial is set (<think> is an added, non-special token in
// Qwen3), and decodes invalid UTF-8 lossily.
type byteTok struct{}

var toySpecials = []struct {
	text    string
	special bool
}{
	{"<|endoftext|>", true},
	{"<|im_start|>", true},
	{"<|im_end|>", true},
	{"<think>", false},
	{"</think>", false},
}

const toySpecialBase = 1000

func (byteTok) Encode(s string) []int {
	ids := make([]int, 0, len(s))
outer:
	for i := 0; i < len(s); {
		if s[i] == '<' {
			for k, sp := range toySpecials {
				if strings.HasPrefix(s[i:], sp.text) {
					ids = append(ids, toySpecialBase+k)
					i += len(sp.text)
					continue outer
				}
			}
		}
		ids = append(ids, int(s[i]))
		i++
	}
	return ids
}

func (byteTok) Decode(ids []int, skipSpecial bool) string {
	var b []byte
	for _, id := range ids {
		if id >= toySpecialBase {
			sp := toySpecials[id-toySpecialBase]
			if !(skipSpecial && sp.special) {
				b = append(b, sp.text...)
			}
			continue
		}
		b = append(b, byte(id))
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// hashedTok adds the optional SHA256 method.
type hashedTok struct{ byteTok }

func (hashedTok) SHA256() string { return "toy-byte-tokenizer" }

// sampleDir locates the shared LongBench v1 sample, or skips.
func sampleDir(tb testing.TB) string { return testenv.LongBenchSample(tb) }

// writeFiles creates files under dir from name -> content.
func writeFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
