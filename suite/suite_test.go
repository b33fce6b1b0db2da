package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

var update = flag.Bool("update", false, "rewrite testdata/tiny.digest")

// tinyRecipe covers every op and structured fill at small sizes.
const tinyRecipe = `{
 "name": "tiny", "version": "0.1.0", "spec_version": 1, "seed": 7,
 "cases": [
  {"id": "mm-kn", "op": "matmul", "split": "public", "params": {"m": 3, "k": 37, "n": 5, "dtype": "float16"}},
  {"id": "mm-nk", "op": "matmul", "split": "public", "params": {"m": 2, "k": 64, "n": 4100, "dtype": "bfloat16", "b_layout": "NK"}},
  {"id": "mm-f32", "op": "matmul", "split": "benchmark", "params": {"m": 4, "k": 9, "n": 6, "dtype": "float32"}},
  {"id": "sm", "op": "softmax", "split": "public", "params": {"m": 9, "n": 300, "dtype": "float16", "outlier_rows": 3, "neg_inf_rows": 2, "neg_inf_prefix": 64, "masked_rows": 1}},
  {"id": "sm-bf16", "op": "softmax", "split": "public", "params": {"m": 4, "n": 70000, "dtype": "bfloat16", "outlier_rows": 1}},
  {"id": "rc", "op": "reshape_and_cache", "split": "public", "params": {"t": 40, "t_s": 35, "hkv": 2, "d": 16, "bs": 4, "nb": 30, "dtype": "float16", "skip_frac": 0.2, "slot0": true}},
  {"id": "rc-hostile", "op": "reshape_and_cache", "split": "public", "params": {"t": 10, "hkv": 1, "d": 8, "bs": 4, "nb": 5, "dtype": "bfloat16", "skip_frac": 0.3, "hostile": true}},
  {"id": "pa", "op": "paged_attention", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "bfloat16", "context_lens": [4, 5, 1, 13], "shared_blocks": 1}},
  {"id": "pa-hostile", "op": "paged_attention", "split": "public", "params": {"hq": 5, "hkv": 1, "d": 8, "bs": 8, "dtype": "float16", "context_lens": [3, 17, 9], "hostile": true, "extra_blocks": 2}},
  {"id": "pa-needle", "op": "paged_attention", "split": "public", "params": {"hq": 4, "hkv": 2, "d": 16, "bs": 4, "dtype": "float16", "context_lens": [9, 14], "needle": "last"}},
  {"id": "pa-drawn", "op": "paged_attention", "split": "benchmark", "params": {"hq": 4, "hkv": 1, "d": 8, "bs": 16, "dtype": "float32", "b": 6, "len_mean": 40, "len_sigma": 1, "len_max": 100, "min_block": 20}},
  {"id": "quest", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "bfloat16", "context_lens": [3, 8, 30, 41], "k": 4}},
  {"id": "quest-ties", "op": "quest", "split": "public", "params": {"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [16, 24], "k": 3, "tie": true}},
  {"id": "quest-excl", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 64, "bs": 16, "dtype": "bfloat16", "context_lens": [200, 161], "k": 4, "needle": "exclude", "plant_gain": 4, "granularity": "kv_group_sum"}},
  {"id": "quest-hidden", "op": "quest", "split": "hidden", "params": {"hq": 4, "hkv": 1, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [20], "k": 2}}
 ]
}`

func tiny(t testing.TB) *manifests.Recipe {
	t.Helper()
	r, err := manifests.ParseRecipe("tiny", []byte(tinyRecipe))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// buildTo builds r into dir/<name> and returns the manifest.
func buildTo(t testing.TB, r *manifests.Recipe, dir string, o Options) *manifests.Manifest {
	t.Helper()
	bw, err := manifests.CreateBundle(filepath.Join(dir, r.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	m, err := Build(context.Background(), r, BundleSink{W: bw}, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.Commit(m); err != nil {
		t.Fatal(err)
	}
	return m
}

var secret = []byte("organiser secret")

func TestDeterministicAcrossWorkers(t *testing.T) {
	checkPinnedDigest(t, tiny(t), "tiny.digest", Options{Secret: secret})
}

// checkPinnedDigest builds r at several GOMAXPROCS/Jobs settings, requires
// one digest, and compares it with testdata/<pin> (rewritten by -update).
func checkPinnedDigest(t *testing.T, r *manifests.Recipe, pin string, o Options) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var digests []string
	for _, cfg := range []struct{ procs, jobs int }{{1, 1}, {2, 3}, {3, 2}} {
		runtime.GOMAXPROCS(cfg.procs)
		o.Jobs = cfg.jobs
		m := buildTo(t, r, t.TempDir(), o)
		digests = append(digests, m.Digest)
	}
	if digests[0] != digests[1] || digests[0] != digests[2] {
		t.Fatalf("digests differ across GOMAXPROCS/jobs: %v", digests)
	}
	// The pinned digest guards every generator stream and kernel at once:
	// a change here means bundles made by earlier versions no longer
	// reproduce, which needs a generator or suite version bump.
	path := filepath.Join("testdata", pin)
	if *update {
		os.WriteFile(path, []byte(digests[0]+"\n"), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := digests[0]; got != strings.TrimSpace(string(want)) {
		t.Errorf("digest of the %s suite = %s, pinned %s (run with -update only for an intended change)", r.Name, got, want)
	}
}

func TestRegenerateAndTamper(t *testing.T) {
	r := tiny(t)
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Jobs: 2, Secret: secret})
	bdir := filepath.Join(dir, r.Name)
	if probs := manifests.Verify(bdir, m, 2); len(probs) > 0 {
		t.Fatalf("fresh bundle fails verify: %v", probs)
	}
	probs, err := Regenerate(context.Background(), m, Options{Jobs: 2, Secret: secret})
	if err != nil || len(probs) > 0 {
		t.Fatalf("regenerate: %v %v", err, probs)
	}
	if _, err := Regenerate(context.Background(), m, Options{}); !errors.Is(err, ErrSecret) {
		t.Errorf("regenerate without the secret: err = %v, want ErrSecret", err)
	}
	if _, err := Regenerate(context.Background(), m, Options{Secret: []byte("wrong")}); !errors.Is(err, ErrSecret) {
		t.Errorf("regenerate with a wrong secret: err = %v, want ErrSecret", err)
	}
	// A manifest whose recorded params were edited no longer reproduces.
	edited := *m
	edited.Cases = slices.Clone(m.Cases)
	edited.Cases[0].Params = json.RawMessage(strings.Replace(string(m.Cases[0].Params), `"m":3`, `"m":4`, 1))
	probs, err = Regenerate(context.Background(), &edited, Options{Jobs: 2, Secret: secret})
	if err != nil || len(probs) == 0 {
		t.Fatalf("edited params: err %v, problems %v; want differences", err, probs)
	}
	// One flipped bit in any tensor is caught by verify.
	for _, c := range m.Cases {
		for _, tn := range c.Tensors {
			p := filepath.Join(bdir, filepath.FromSlash(tn.Path))
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b := bytes.Clone(orig)
			b[len(b)-1] ^= 1
			os.WriteFile(p, b, 0o644)
			if probs := manifests.Verify(bdir, m, 1); len(probs) != 1 || probs[0].Tensor != tn.Name {
				t.Errorf("%s/%s: flipped bit gives %v", c.ID, tn.Name, probs)
			}
			os.WriteFile(p, orig, 0o644)
		}
	}
}

func TestShardMergeEqualsUnsharded(t *testing.T) {
	r := tiny(t)
	dir := t.TempDir()
	whole := buildTo(t, r, filepath.Join(dir, "whole"), Options{Jobs: 2})
	var shardDirs []string
	for i := 0; i < 3; i++ {
		sr := *r
		sr.Name = r.Name
		d := filepath.Join(dir, "shard", string(rune('a'+i)))
		buildTo(t, &sr, d, Options{Jobs: 1, Shard: Shard{Index: i, Count: 3}})
		shardDirs = append(shardDirs, filepath.Join(d, r.Name))
	}
	slices.Reverse(shardDirs) // any order
	merged, err := MergeBundles(shardDirs, filepath.Join(dir, "merged"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Digest != whole.Digest {
		t.Fatalf("merged digest %s != unsharded %s", merged.Digest, whole.Digest)
	}
	for _, c := range whole.Cases {
		for _, tn := range c.Tensors {
			a, _ := os.ReadFile(filepath.Join(dir, "whole", r.Name, tn.Path))
			b, _ := os.ReadFile(filepath.Join(dir, "merged", tn.Path))
			if !bytes.Equal(a, b) || len(a) == 0 {
				t.Errorf("%s differs after merge", tn.Path)
			}
		}
	}
	if _, err := MergeBundles(shardDirs[:2], filepath.Join(dir, "m2"), 1); !errors.Is(err, ErrShard) {
		t.Errorf("merging 2 of 3 shards: err = %v, want ErrShard", err)
	}
}

func TestHiddenSeeds(t *testing.T) {
	r := tiny(t)
	if _, err := SelectCases(r, Options{Splits: []string{"hidden"}}); !errors.Is(err, ErrSecret) {
		t.Fatalf("hidden without secret: %v", err)
	}
	o := Options{Splits: []string{"hidden"}, Secret: secret}
	m1, err := Build(context.Background(), r, HashSink{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(m1.Cases) != 1 || m1.HiddenCommitment == "" {
		t.Fatalf("hidden build: %d cases, commitment %q", len(m1.Cases), m1.HiddenCommitment)
	}
	o.Secret = []byte("another secret")
	m2, err := Build(context.Background(), r, HashSink{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if m1.Cases[0].Tensors[0].SHA256 == m2.Cases[0].Tensors[0].SHA256 {
		t.Error("hidden inputs do not depend on the secret")
	}
	if m1.HiddenCommitment == m2.HiddenCommitment {
		t.Error("commitment does not depend on the secret")
	}
}

func TestBadParams(t *testing.T) {
	for _, tc := range []struct{ op, params string }{
		{"matmul", `{"m": 0, "k": 4, "n": 4, "dtype": "float16"}`},
		{"matmul", `{"m": 1, "k": 4, "n": 4, "dtype": "int8"}`},
		{"matmul", `{"m": 1, "k": 4, "n": 4, "dtype": "float16", "bogus": 1}`},
		{"matmul", `{"m": 1, "k": 200000, "n": 200000, "dtype": "float16", "b_layout": "NK"}`},
		{"softmax", `{"m": 2, "n": 8, "dtype": "float16", "outlier_rows": 3}`},
		{"softmax", `{"m": 2, "n": 8, "dtype": "float16", "neg_inf_rows": 1}`},
		{"reshape_and_cache", `{"t": 100, "hkv": 1, "d": 4, "bs": 4, "nb": 2, "dtype": "float16"}`},
		{"paged_attention", `{"hq": 6, "hkv": 4, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [4]}`},
		{"paged_attention", `{"hq": 4, "hkv": 4, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [0]}`},
		{"paged_attention", `{"hq": 4, "hkv": 4, "d": 8, "bs": 4, "dtype": "float16"}`},
		{"paged_attention", `{"hq": 4, "hkv": 4, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [4], "needle": "middle"}`},
		{"quest", `{"hq": 4, "hkv": 4, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [40], "k": 1}`},
		{"quest", `{"hq": 4, "hkv": 4, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [40], "k": 4, "granularity": "head"}`},
	} {
		_, err := EstimateBytes(manifests.RecipeCase{ID: "x", Op: tc.op, Split: "public", Params: json.RawMessage(tc.params)})
		if !errors.Is(err, ErrParams) {
			t.Errorf("%s %s: err = %v, want ErrParams", tc.op, tc.params, err)
		}
	}
	_, err := EstimateBytes(manifests.RecipeCase{ID: "x", Op: "conv2d", Split: "public", Params: json.RawMessage(`{}`)})
	if !errors.Is(err, ErrUnknownOp) {
		t.Errorf("unknown op: %v", err)
	}
	// A layout that cannot be built is an error at build time, not a panic.
	r := &manifests.Recipe{Name: "bad", Version: "1", SpecVersion: 1, Cases: []manifests.RecipeCase{{ID: "a", Op: "paged_attention", Split: "public",
		Params: json.RawMessage(`{"hq": 2, "hkv": 1, "d": 4, "bs": 4, "dtype": "float16", "context_lens": [2, 3], "shared_blocks": 1}`)}}}
	if _, err := Build(context.Background(), r, HashSink{}, Options{}); !errors.Is(err, ErrParams) {
		t.Errorf("shared block with L < bs: err = %v", err)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, tiny(t), HashSink{}, Options{Jobs: 2}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled build: err = %v", err)
	}
}

// readTensor loads a tensor of a built bundle as raw header + data.
func readTensor(t *testing.T, dir string, c *manifests.Case, name string) (npy.Header, []byte) {
	t.Helper()
	tn := c.Tensor(name)
	if tn == nil {
		t.Fatalf("case %s has no tensor %s", c.ID, name)
	}
	h, data, err := manifests.LoadTensor(dir, tn)
	if err != nil {
		t.Fatal(err)
	}
	return h, data
}

// TestQuestNoDense checks that no_dense drops only dense_out and its info:
// every other tensor (inputs, metadata, scores, selection, out, lse) has
// the same bytes as with the dense pass, although without it only the
// selected blocks' values are regenerated.
func TestQuestNoDense(t *testing.T) {
	const rec = `{"name": "nd", "version": "0.1.0", "spec_version": 1, "seed": 3, "cases": [
  {"id": "a", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "float16", "context_lens": [3, 30, 41, 77], "k": 3, "granularity": "kv_group_sum"}},
  {"id": "b", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "float16", "context_lens": [3, 30, 41, 77], "k": 3, "granularity": "kv_group_sum", "no_dense": true}}]}`
	r, err := manifests.ParseRecipe("nd", []byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	r.Cases[1].ID = "a" // same id, hence the same streams
	dense, err := Build(context.Background(), &manifests.Recipe{Name: r.Name, Version: r.Version, SpecVersion: r.SpecVersion, Seed: r.Seed, Cases: r.Cases[:1]}, HashSink{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := Build(context.Background(), &manifests.Recipe{Name: r.Name, Version: r.Version, SpecVersion: r.SpecVersion, Seed: r.Seed, Cases: r.Cases[1:]}, HashSink{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, tn := range dense.Cases[0].Tensors {
		want[tn.Name] = tn.SHA256
	}
	if _, ok := want["dense_out"]; !ok {
		t.Fatal("the dense case has no dense_out")
	}
	if len(sparse.Cases[0].Tensors) != len(want)-1 {
		t.Fatalf("no_dense case has %d tensors, want %d", len(sparse.Cases[0].Tensors), len(want)-1)
	}
	for _, tn := range sparse.Cases[0].Tensors {
		if tn.Name == "dense_out" {
			t.Fatal("no_dense case wrote dense_out")
		}
		if want[tn.Name] != tn.SHA256 {
			t.Errorf("%s differs between the dense and no_dense builds", tn.Name)
		}
	}
	if bytes.Contains(sparse.Cases[0].Info, []byte("sparse_dense_rel_l2")) {
		t.Error("no_dense case records sparse_dense_rel_l2")
	}
}

// TestQuestMetaSources builds Quest cases with the block metadata taken
// from the key-cache writer and with the keys regenerated, and wants the
// same hashes: the writer's per-block metadata and the per-head partial
// regeneration (rows of the selected KV heads only, no_dense) must not
// change a bit. The shapes put generator chunks across head rows (d 12,
// hkv 3) and cover float32/bfloat16, hostile, tie, shared blocks and the
// exclude needle.
func TestQuestMetaSources(t *testing.T) {
	const rec = `{"name": "qm", "version": "0.1.0", "spec_version": 1, "seed": 5, "cases": [
  {"id": "qh", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "float16", "context_lens": [3, 30, 41, 77], "k": 3, "no_dense": true}},
  {"id": "gs", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "bfloat16", "context_lens": [5, 30, 64], "k": 4, "granularity": "kv_group_sum", "no_dense": true}},
  {"id": "odd", "op": "quest", "split": "public", "params": {"hq": 6, "hkv": 3, "d": 12, "bs": 8, "dtype": "float16", "context_lens": [9, 50, 100, 33], "k": 4, "no_dense": true, "hostile": true}},
  {"id": "f32", "op": "quest", "split": "public", "params": {"hq": 4, "hkv": 4, "d": 8, "bs": 4, "dtype": "float32", "context_lens": [17, 40], "k": 3, "no_dense": true, "shared_blocks": 1}},
  {"id": "tie", "op": "quest", "split": "public", "params": {"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [17, 40], "k": 3, "tie": true, "no_dense": true}},
  {"id": "needle", "op": "quest", "split": "public", "params": {"hq": 4, "hkv": 2, "d": 128, "bs": 16, "dtype": "bfloat16", "context_lens": [300, 200], "k": 4, "needle": "exclude"}},
  {"id": "dense", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "float16", "context_lens": [3, 30, 41], "k": 3}}]}`
	r, err := manifests.ParseRecipe("qm", []byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer func(v string) { questMeta = v }(questMeta)
	hashes := map[string]map[string]string{}
	for _, mode := range []string{"writer", "regen", ""} {
		questMeta = mode
		m, err := Build(context.Background(), r, HashSink{}, Options{})
		if err != nil {
			t.Fatalf("mode %q: %v", mode, err)
		}
		hashes[mode] = map[string]string{}
		for _, c := range m.Cases {
			for _, tn := range c.Tensors {
				hashes[mode][c.ID+"/"+tn.Name] = tn.SHA256
			}
		}
	}
	if len(hashes["writer"]) == 0 {
		t.Fatal("no tensors built")
	}
	for k, h := range hashes["regen"] {
		if hashes["writer"][k] != h || hashes[""][k] != h {
			t.Errorf("%s: hashes differ between metadata sources (writer %.12s, regen %.12s, auto %.12s)", k, hashes["writer"][k], h, hashes[""][k])
		}
	}
}

// TestPagedWriterFails makes the input writer fail partway through the
// key cache while the goldens wait for (quest, metadata from the writer)
// or run alongside it (paged_attention): Build must return the writer's
// error, not panic on results the stopped goldens never made.
func TestPagedWriterFails(t *testing.T) {
	const rec = `{"name": "wf", "version": "0.1.0", "spec_version": 1, "seed": 9, "cases": [
  {"id": "q", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "float16", "context_lens": [30, 41, 77, 12], "k": 3, "no_dense": true}},
  {"id": "pa", "op": "paged_attention", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "float16", "context_lens": [30, 41, 77, 12]}}]}`
	r, err := manifests.ParseRecipe("wf", []byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer func(v string) { questMeta = v }(questMeta)
	for _, mode := range []string{"writer", ""} {
		questMeta = mode
		for _, c := range r.Cases {
			one := &manifests.Recipe{Name: r.Name, Version: r.Version, SpecVersion: r.SpecVersion, Seed: r.Seed, Cases: []manifests.RecipeCase{c}}
			_, err := Build(context.Background(), one, &cutSink{failIn: "key_cache"}, Options{Jobs: 1})
			if !errors.Is(err, errCut) {
				t.Errorf("%s (metadata %q): Build error %v, want the writer's", c.ID, mode, err)
			}
		}
	}
}

var errCut = errors.New("injected: device full")

// cutSink hashes like HashSink but fails writes to the file whose path
// contains failIn after its first 4 KiB.
type cutSink struct{ failIn string }

func (s *cutSink) Create(rel string, compress bool) (File, error) {
	f, _ := HashSink{}.Create(rel, compress)
	if !strings.Contains(rel, s.failIn) {
		return f, nil
	}
	return &cutFile{File: f}, nil
}

type cutFile struct {
	File
	n int
}

func (f *cutFile) Write(p []byte) (int, error) {
	if f.n += len(p); f.n > 4096 {
		return 0, errCut
	}
	return f.File.Write(p)
}
