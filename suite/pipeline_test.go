package suite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/manifests"
)

// tinyPipeline is a recipe of small chains: both kinds, a graph-padded
// variant, over a schedule of short requests on a small cache.
func tinyPipeline(t testing.TB) *manifests.Recipe {
	t.Helper()
	sched := `"schedule": {"max_num_batched_tokens": 48, "max_num_seqs": 8, "block_size": 16, "num_blocks": 48, "seed": 1}`
	reqs := `"requests": {"n": 6, "prompt_mean": 50, "prompt_sigma": 0.5, "prompt_max": 120, "output_mean": 6, "output_sigma": 0.3, "output_max": 12, "seed": 7, "arrival_every": 1}`
	dsaReqs := `"requests": {"n": 5, "prompt_mean": 60, "prompt_sigma": 0.4, "prompt_max": 150, "output_mean": 6, "output_sigma": 0.3, "output_max": 12, "seed": 7, "arrival_every": 1}`
	data := `{"name": "tiny-pipeline", "version": "0.0.1", "spec_version": 1, "seed": 42, "cases": [
	 {"id": "paged", "op": "pipeline", "split": "public", "params": {"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", ` + sched + `, ` + reqs + `, "steps": 3}},
	 {"id": "paged-graph", "op": "pipeline", "split": "public", "params": {"chain": "paged", "hq": 4, "hkv": 1, "d": 16, "dtype": "float16", "graph_mode": true, ` + sched + `, ` + reqs + `, "start": "index", "start_step": 5, "steps": 2}},
	 {"id": "quest", "op": "pipeline", "split": "public", "params": {"chain": "quest", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", "k": 3, ` + sched + `, ` + reqs + `, "steps": 2}},
	 {"id": "dsa", "op": "pipeline", "split": "public", "params": {"chain": "dsa", "h": 16, "k": 48, "schedule": {"max_num_batched_tokens": 96, "max_num_seqs": 8, "block_size": 64, "num_blocks": 16, "seed": 1}, ` + dsaReqs + `, "steps": 3}},
	 {"id": "dsa-mtp", "op": "pipeline", "split": "public", "params": {"chain": "dsa", "h": 16, "k": 48, "next_n": 2, "schedule": {"max_num_batched_tokens": 96, "max_num_seqs": 8, "block_size": 64, "num_blocks": 16, "num_speculative_tokens": 1, "acceptance_rate": 0.7, "seed": 1}, ` + dsaReqs + `, "steps": 2}}
	]}`
	r, err := manifests.ParseRecipe("tiny-pipeline", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPipelineBundle: a pipeline recipe case becomes one case per stage
// and step, the chain is recorded, a later stage's cache input is the
// earlier golden's file, the bundle verifies and regenerates.
func TestPipelineBundle(t *testing.T) {
	r := tinyPipeline(t)
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Jobs: 2})
	bdir := filepath.Join(dir, r.Name)
	back, err := manifests.ReadManifest(bdir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Chains) != 5 {
		t.Fatalf("%d chains, want 5", len(back.Chains))
	}
	for _, ch := range back.Chains {
		cs := back.ChainCases(ch.ID)
		if len(cs) != len(ch.Steps)*len(ch.Stages) {
			t.Fatalf("chain %s: %d cases", ch.ID, len(cs))
		}
		if ch.Kind == "dsa" {
			checkDSAChainFiles(t, bdir, cs, len(ch.Stages))
			continue
		}
		for i, c := range cs {
			if c.Chain.Stage == 0 && i > 0 {
				// Step s's cache before the write is step s-1's after it.
				prev := cs[i-len(ch.Stages)]
				if got, want := c.Tensor("key_cache").SHA256, prev.Tensor("key_cache_out").SHA256; got != want {
					t.Errorf("%s key_cache %s, previous step's key_cache_out %s", c.ID, got, want)
				}
				if c.Tensor("key_cache").Path != prev.Tensor("key_cache_out").Path {
					t.Errorf("%s: key_cache is not the previous golden's file", c.ID)
				}
			}
			if c.Chain.Stage == 1 {
				w := cs[i-1]
				if c.Tensor("value_cache").Path != w.Tensor("value_cache_out").Path {
					t.Errorf("%s: value_cache is not the write stage's golden", c.ID)
				}
			}
		}
	}
	if probs := manifests.Verify(bdir, back, 2); len(probs) > 0 {
		t.Fatalf("verify: %v", probs)
	}
	probs, err := Regenerate(context.Background(), back, Options{Jobs: 1})
	if err != nil || len(probs) > 0 {
		t.Fatalf("regenerate: %v %v", err, probs)
	}
	// A mixed step, and graph padding with slot -1.
	var mixed, padded bool
	for i := range m.Cases {
		var info struct {
			Mixed  bool `json:"mixed"`
			Tokens int  `json:"tokens"`
			Padded int  `json:"padded_tokens"`
		}
		json.Unmarshal(m.Cases[i].Info, &info)
		mixed = mixed || info.Mixed
		padded = padded || info.Padded > info.Tokens
	}
	if !mixed || !padded {
		t.Errorf("mixed step %v, padded step %v: want both", mixed, padded)
	}
	checkControls(t, bdir, back)
	// Every stage case holds exactly its op's tensors, in the table's order.
	checkOpTable(t, r, map[string]bool{})
}

// TestChainNegatives: every chain's golden outputs pass as a chain; each
// chain negative is reported first at its stage and step, and the stages
// after it are still judged.
func TestChainNegatives(t *testing.T) {
	r := tinyPipeline(t)
	dir := t.TempDir()
	buildTo(t, r, dir, Options{Jobs: 2})
	bdir := filepath.Join(dir, r.Name)
	m, err := manifests.ReadManifest(bdir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ch := range m.Chains {
		v, err := JudgeChain(bdir, m, ch.ID, ChainControl{}.Candidates(bdir))
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK() || v.First != nil || len(v.Stages) != len(ch.Steps)*len(ch.Stages) {
			t.Fatalf("chain %s goldens: %s, first %+v, %d stages", ch.ID, v.Status, v.First, len(v.Stages))
		}
		ctls, err := ChainControls(bdir, m, ch.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ctls {
			v, err := JudgeChain(bdir, m, ch.ID, k.Candidates(bdir))
			if err != nil {
				t.Fatal(err)
			}
			if v.OK() || v.First == nil || v.First.Step != k.Step || v.First.Stage != k.Stage || v.First.Case != k.Case {
				t.Errorf("%s: %s, first divergence %+v, want step %d stage %d", k.Name, v.Status, v.First, k.Step, k.Stage)
				continue
			}
			for _, s := range v.Stages {
				if s.Status == compare.Skipped {
					t.Errorf("%s: stage %s not judged", k.Name, s.Case)
				}
			}
			name, _, _ := strings.Cut(k.Name, "@")
			seen[ch.Stages[k.Stage]+"/"+name] = true
			if name == "wrong_block" && k.Step != ch.Steps[len(ch.Steps)-1] {
				// Carried into the next step's cache: that write fails too.
				fails := 0
				for _, s := range v.Stages {
					if s.Stage == 0 && s.Status == compare.Fail {
						fails++
					}
				}
				if fails < 2 {
					t.Errorf("%s: the wrong write was not carried (%d failing write stages)", k.Name, fails)
				}
			}
		}
	}
	for _, want := range []string{"reshape_and_cache/wrong_block", "reshape_and_cache/pad_slot_write", "unified_attention/causal_off_by_one", "quest/wrong_gqa",
		"dsa_index_cache/wrong_block", "dsa_indexer/relu_after_weight", "dsa_indexer/ignore_causal", "dsa_sparse_attention/minus_one_as_slot0"} {
		if !seen[want] {
			t.Errorf("no chain negative %s (have %v)", want, seen)
		}
	}
}

// TestPipelineShardMerge: sharding deals whole chains out; merging the
// shards restores the unsharded bundle (a shared file placed once).
func TestPipelineShardMerge(t *testing.T) {
	r := tinyPipeline(t)
	dir := t.TempDir()
	whole := buildTo(t, r, filepath.Join(dir, "whole"), Options{Jobs: 2})
	var shards []string
	for i := 0; i < 2; i++ {
		d := filepath.Join(dir, "shard", string(rune('a'+i)))
		buildTo(t, r, d, Options{Jobs: 1, Shard: Shard{Index: i, Count: 2}})
		shards = append(shards, filepath.Join(d, r.Name))
	}
	merged, err := MergeBundles(shards, filepath.Join(dir, "merged"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Digest != whole.Digest {
		t.Fatalf("merged digest %s != unsharded %s", merged.Digest, whole.Digest)
	}
	if probs := manifests.Verify(filepath.Join(dir, "merged"), merged, 2); len(probs) > 0 {
		t.Fatalf("merged bundle: %v", probs)
	}
}

// TestPipelineDeterministic: one digest at every GOMAXPROCS and job
// count, pinned in testdata/tiny-pipeline.digest (-update rewrites it).
func TestPipelineDeterministic(t *testing.T) {
	checkPinnedDigest(t, tinyPipeline(t), "tiny-pipeline.digest", Options{})
}

// TestPipelineBadParams: bad pipeline params are ErrParams naming what is
// wrong, before anything is built.
func TestPipelineBadParams(t *testing.T) {
	sched := `"schedule": {"max_num_batched_tokens": 48, "block_size": 16, "num_blocks": 48}`
	reqs := `"requests": {"prompts": [40, 30], "outputs": [4, 4]}`
	for _, tc := range []struct{ params, want string }{
		{`{"chain": "mla", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", ` + sched + `, ` + reqs + `}`, "want paged, quest or dsa"},
		{`{"chain": "dsa", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", "schedule": {"block_size": 64, "num_blocks": 8}, ` + reqs + `}`, "not hq"},
		{`{"chain": "dsa", "h": 16, ` + sched + `, ` + reqs + `}`, "pages are 64"},
		{`{"chain": "dsa", "h": 16, "scale_fmt": "fp32", "schedule": {"block_size": 64, "num_blocks": 8}, ` + reqs + `}`, "ue8m0"},
		{`{"chain": "dsa", "h": 16, "next_n": 3, "schedule": {"block_size": 64, "num_blocks": 8}, ` + reqs + `}`, "next_n"},
		{`{"chain": "dsa", "schedule": {"block_size": 64, "num_blocks": 8}, ` + reqs + `}`, "h ="},
		{`{"chain": "dsa", "h": 16, "next_n": 2, "schedule": {"block_size": 64, "num_blocks": 8}, ` + reqs + `, "start": "index", "start_step": 1}`, "next_n = 2"},
		{`{"chain": "dsa", "h": 16, "schedule": {"block_size": 64, "num_blocks": 100000}, ` + reqs + `}`, "at most"},
		{`{"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", "h": 16, ` + sched + `, ` + reqs + `}`, "dsa chain's params"},
		{`{"chain": "paged", "hq": 4, "hkv": 3, "d": 16, "dtype": "bfloat16", ` + sched + `, ` + reqs + `}`, "multiple"},
		{`{"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "float32", ` + sched + `, ` + reqs + `}`, "float16 or bfloat16"},
		{`{"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", ` + sched + `, "requests": {"prompts": [40], "outputs": []}}`, "equally long"},
		{`{"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", ` + sched + `, ` + reqs + `, "steps": 500}`, "steps"},
		{`{"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", ` + sched + `, ` + reqs + `, "steps": 40}`, "asked for"},
		{`{"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", ` + sched + `, ` + reqs + `, "start": "never"}`, "start"},
		{`{"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", "schedule": {"num_blocks": 2}, ` + reqs + `}`, "schedule"},
		{`{"chain": "paged", "hq": 4, "hkv": 2, "d": 128, "dtype": "bfloat16", "schedule": {"num_blocks": 1048576}, ` + reqs + `}`, "pipeline holds two"},
		{`{"chain": "quest", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", "graph_mode": true, ` + sched + `, ` + reqs + `}`, "graph"},
		{`{"chain": "paged", "hq": 4, "hkv": 2, "d": 16, "dtype": "bfloat16", "extra": 1, ` + sched + `, ` + reqs + `}`, "extra"},
	} {
		_, err := planCase(manifests.RecipeCase{ID: "p", Op: PipelineOp, Split: "public", Params: json.RawMessage(tc.params)})
		if !errors.Is(err, ErrParams) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrParams mentioning %q", tc.params, err, tc.want)
		}
	}
}

// BenchmarkPipelineBuild measures the public stage4-steps chains (plan,
// schedule, every stage's golden, encoding and sha256; no disk) with
// SetBytes = the distinct bytes written (a file listed twice counted once).
func BenchmarkPipelineBuild(b *testing.B) {
	r, err := manifests.LookupSuite("stage4-steps")
	if err != nil {
		b.Fatal(err)
	}
	var bytes int64
	b.ReportAllocs()
	for b.Loop() {
		m, err := Build(context.Background(), r, HashSink{}, Options{Jobs: 2, Splits: []string{manifests.SplitPublic}})
		if err != nil {
			b.Fatal(err)
		}
		bytes = 0
		seen := map[string]bool{}
		for _, c := range m.Cases {
			for _, t := range c.Tensors {
				if !seen[t.Path] {
					seen[t.Path] = true
					bytes += t.Bytes
				}
			}
		}
	}
	b.SetBytes(bytes)
}

// checkDSAChainFiles: the index cache a DSA step writes is its indexer's
// input and the next step's write input (the same file); the indexer's
// topk_physical is the attention's sparse_indices, its block table and
// seq_lens the attention's (same files).
func checkDSAChainFiles(t *testing.T, dir string, cs []*manifests.Case, n int) {
	t.Helper()
	same := func(a *manifests.Case, an string, b *manifests.Case, bn string) {
		if a.Tensor(an).Path != b.Tensor(bn).Path || a.Tensor(an).SHA256 != b.Tensor(bn).SHA256 {
			t.Errorf("%s %s is not %s %s's file", a.ID, an, b.ID, bn)
		}
	}
	for i := 0; i+n <= len(cs); i += n {
		w, ix, at := cs[i], cs[i+1], cs[i+2]
		if w.Op != "dsa_index_cache" || ix.Op != "dsa_indexer" || at.Op != "dsa_sparse_attention" {
			t.Fatalf("stages %s %s %s", w.Op, ix.Op, at.Op)
		}
		same(ix, "index_cache", w, "index_cache_out")
		if i > 0 {
			same(w, "index_cache", cs[i-n], "index_cache_out")
		}
		same(at, "block_table", ix, "block_table")
		same(at, "seq_lens", ix, "seq_lens")
		si, err := caseData{dir: dir, c: at}.i32("sparse_indices")
		if err != nil {
			t.Fatal(err)
		}
		tp, err := caseData{dir: dir, c: ix}.i32("topk_physical")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(si, tp) || len(si) == 0 {
			t.Errorf("%s: sparse_indices are not the indexer's topk_physical", at.ID)
		}
	}
}
