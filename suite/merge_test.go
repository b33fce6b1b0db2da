package suite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/goldset/goldset/manifests"
)

// Issue 11: merge --out may not be (or contain) a shard, a link in a shard
// is refused and never copied, and an existing merged bundle is replaced
// only with Overwrite.
func TestMergeRefusesTargetsAndLinks(t *testing.T) {
	r := tiny(t)
	dir := t.TempDir()
	var shards []string
	for i := 0; i < 2; i++ {
		d := filepath.Join(dir, "shards", string(rune('a'+i)))
		buildTo(t, r, d, Options{Jobs: 1, Shard: Shard{Index: i, Count: 2}})
		shards = append(shards, filepath.Join(d, r.Name))
	}
	ctx := context.Background()
	for _, out := range []string{shards[0], filepath.Join(dir, "shards"), filepath.Join(shards[1], "x")} {
		if _, err := MergeBundlesContext(ctx, shards, out, MergeOptions{Jobs: 1, Overwrite: true}); !errors.Is(err, ErrMergeTarget) {
			t.Errorf("out %s: %v, want ErrMergeTarget", out, err)
		}
	}
	out := filepath.Join(dir, "merged")
	var done, total int64
	if _, err := MergeBundlesContext(ctx, shards, out, MergeOptions{Jobs: 1, Progress: func(d, n int64) { done, total = d, n }}); err != nil {
		t.Fatal(err)
	}
	if done != total || total == 0 {
		t.Errorf("progress ended at %d of %d", done, total)
	}
	if _, err := MergeBundlesContext(ctx, shards, out, MergeOptions{Jobs: 1}); !errors.Is(err, manifests.ErrExists) {
		t.Errorf("merge over the merged bundle without Overwrite: %v", err)
	}
	var replaced *manifests.Manifest
	if _, err := MergeBundlesContext(ctx, shards, out, MergeOptions{Jobs: 1, Overwrite: true, OnReplace: func(m *manifests.Manifest) { replaced = m }}); err != nil || replaced == nil {
		t.Errorf("merge --overwrite: %v, announced %v", err, replaced != nil)
	}
	m, _ := manifests.ReadManifest(shards[0])
	p := filepath.Join(shards[0], m.Cases[0].Tensors[0].Path)
	real := filepath.Join(dir, "real.npy")
	os.Rename(p, real)
	os.Symlink(real, p)
	out2 := filepath.Join(dir, "merged2")
	if _, err := MergeBundlesContext(ctx, shards, out2, MergeOptions{Jobs: 1}); !errors.Is(err, ErrShardCorrupt) {
		t.Errorf("shard with a link: %v, want ErrShardCorrupt", err)
	}
	if _, err := os.Lstat(out2); !os.IsNotExist(err) {
		t.Errorf("merge left %s", out2)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	os.Remove(p)
	os.Rename(real, p)
	if _, err := MergeBundlesContext(cctx, shards, out2, MergeOptions{Jobs: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled merge: %v", err)
	}
}
