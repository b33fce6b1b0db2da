package suite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/manifests"
)

// TestTensorHashesPinned pins a digest of every tensor's name, role and
// sha256 in the tiny recipes, apart from the manifest digest: a change to
// the manifest's metadata (work, info) moves the manifest digest but must
// not move a byte of any tensor. testdata/tensors.digest was made by the
// tree before work was recorded (c6c3e08) and is rewritten only by -update;
// it was rewritten once since, when issue 24 added the aux tensors
// index_cache_alt, codes_alt and scales_alt (the hash of every other tensor
// was checked to equal the c6c3e08 pin, 64155959…).
func TestTensorHashesPinned(t *testing.T) {
	h := sha256.New()
	n := 0
	for _, r := range []*manifests.Recipe{tiny(t), tinyDSA(t), tinyMX(t)} {
		m, err := Build(context.Background(), r, HashSink{}, Options{Jobs: 2, Secret: secret, Splits: []string{"public", "benchmark", "hidden", "edge"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Cases {
			for _, ts := range c.Tensors {
				n++
				h.Write([]byte(r.Name + "/" + c.ID + "/" + ts.Name + " " + ts.Role + " " + ts.SHA256 + "\n"))
			}
		}
	}
	got := hex.EncodeToString(h.Sum(nil))
	if n < 300 {
		t.Fatalf("only %d tensors hashed", n)
	}
	pin := filepath.Join("testdata", "tensors.digest")
	if *update {
		os.WriteFile(pin, []byte(got+"\n"), 0o644)
	}
	want, err := os.ReadFile(pin)
	if err != nil {
		t.Fatal(err)
	}
	if got != strings.TrimSpace(string(want)) {
		t.Errorf("tensor hashes of the tiny recipes = %s, pinned %s", got, want)
	}
}
