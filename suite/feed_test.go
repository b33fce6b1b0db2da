package suite

import (
	"context"
	"runtime"
	"testing"

	"github.com/goldset/goldset/manifests"
)

// TestSeqFeedWindow builds paged_attention and Quest cases with a window
// of one block buffer (GOMAXPROCS 2: pure streaming) and of eight
// (GOMAXPROCS 16: blocks produced in parallel, the window refilled within
// a pass), with Quest's metadata regenerated block by block and taken
// from the writer, and wants the same hashes everywhere. The pinned
// digests (TestDeterministicAcrossWorkers) run at GOMAXPROCS <= 3, a
// window of one, so this ties the wider windows to them.
func TestSeqFeedWindow(t *testing.T) {
	const rec = `{"name": "fw", "version": "0.1.0", "spec_version": 1, "seed": 11, "cases": [
  {"id": "pa", "op": "paged_attention", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "float16", "context_lens": [3, 30, 41, 77, 12]}},
  {"id": "pa32", "op": "paged_attention", "split": "public", "params": {"hq": 6, "hkv": 3, "d": 12, "bs": 8, "dtype": "float32", "context_lens": [9, 50, 100], "hostile": true, "needle": "last"}},
  {"id": "qd", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "bfloat16", "context_lens": [3, 30, 41, 77], "k": 3}},
  {"id": "qn", "op": "quest", "split": "public", "params": {"hq": 6, "hkv": 3, "d": 12, "bs": 8, "dtype": "float16", "context_lens": [9, 50, 100, 33], "k": 4, "granularity": "kv_group_sum", "no_dense": true, "hostile": true}},
  {"id": "q32", "op": "quest", "split": "public", "params": {"hq": 4, "hkv": 4, "d": 8, "bs": 4, "dtype": "float32", "context_lens": [17, 40], "k": 3, "no_dense": true, "shared_blocks": 1}}]}`
	r, err := manifests.ParseRecipe("fw", []byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func(v string) { questMeta = v }(questMeta)
	var first map[string]string
	for _, procs := range []int{2, 16} {
		for _, mode := range []string{"regen", "writer"} {
			runtime.GOMAXPROCS(procs)
			questMeta = mode
			if got := len(newSeqFeed(&layout{p: &pagedParams{Hq: 1, Hkv: 1, D: 1, BS: 1, DType: "float32"}, lens: []int{1}}, nil, nil).bufs); got != max(1, procs/2) {
				t.Fatalf("GOMAXPROCS %d: window of %d blocks, want %d", procs, got, max(1, procs/2))
			}
			m, err := Build(context.Background(), r, HashSink{}, Options{})
			if err != nil {
				t.Fatalf("GOMAXPROCS %d, metadata %q: %v", procs, mode, err)
			}
			got := map[string]string{}
			for _, c := range m.Cases {
				for _, tn := range c.Tensors {
					got[c.ID+"/"+tn.Name] = tn.SHA256
				}
			}
			if first == nil {
				first = got
				continue
			}
			for k, h := range first {
				if got[k] != h {
					t.Errorf("GOMAXPROCS %d, metadata %q: %s differs", procs, mode, k)
				}
			}
		}
	}
	if len(first) < 20 {
		t.Fatalf("only %d tensors built", len(first))
	}
}
