package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/manifests"
)

// tinyDSARecipe covers the DSA ops (docs/spec.md §8) at small sizes: every
// index space, next_n 1 and 2, the ragged prefill form, shuffled and
// shared pages, an all-tied row, a planted margin, empty and single-index
// attention rows, both scale formats and bf16 logits. It is a recipe of
// its own so that the tiny recipe's pinned digest stays as it was.
const tinyDSARecipe = `{
 "name": "tiny-dsa", "version": "0.2.0", "spec_version": 1, "seed": 11,
 "cases": [
  {"id": "ic", "op": "dsa_index_cache", "split": "public", "params": {"t": 70, "di": 16, "nb": 3, "skip_frac": 0.2}},
  {"id": "ic-fp32", "op": "dsa_index_cache", "split": "public", "params": {"t": 9, "di": 8, "nb": 1, "scale_fmt": "fp32"}},
  {"id": "bh", "op": "block_header", "split": "public", "params": {"seq_lens": [130, 64, 65], "extra_blocks": 2, "shuffle": true, "shared_pages": 1}},
  {"id": "ix-nn1", "op": "dsa_indexer", "split": "public", "params": {"seq_lens": [1, 63, 64, 65, 200], "hi": 4, "di": 16, "k": 64, "extra_blocks": 1, "shuffle": true}},
  {"id": "ix-nn2", "op": "dsa_indexer", "split": "public", "params": {"seq_lens": [66, 129, 300], "next_n": 2, "hi": 4, "di": 16, "k": 64, "shuffle": true, "shared_pages": 1, "scale_fmt": "fp32"}},
  {"id": "ix-tied", "op": "dsa_indexer", "split": "public", "params": {"seq_lens": [150, 40], "hi": 2, "di": 8, "k": 32, "tied": true}},
  {"id": "ix-margin", "op": "dsa_indexer", "split": "public", "params": {"seq_lens": [300, 90], "hi": 4, "di": 16, "k": 32, "margin": 0.01, "shuffle": true}},
  {"id": "ix-bf16", "op": "dsa_indexer", "split": "benchmark", "params": {"seq_lens": [100], "hi": 4, "di": 16, "k": 16, "logits_dtype": "bfloat16"}},
  {"id": "ix-ragged", "op": "dsa_indexer", "split": "public", "params": {"layout": "ragged", "ctx_lens": [0, 70], "query_lens": [5, 3], "hi": 4, "di": 16, "k": 40}},
  {"id": "sa", "op": "dsa_sparse_attention", "split": "public", "params": {"seq_lens": [1, 65, 150], "next_n": 1, "h": 4, "dc": 32, "dr": 8, "k": 64, "index_hi": 2, "index_di": 8, "shuffle": true, "extra_blocks": 1, "empty_rows": [2], "single_rows": [1]}},
  {"id": "sa-nn2", "op": "dsa_sparse_attention", "split": "public", "params": {"seq_lens": [70, 100], "next_n": 2, "h": 2, "dc": 16, "dr": 4, "k": 32, "index_hi": 2, "index_di": 8, "shared_pages": 1}},
  {"id": "sa-hidden", "op": "dsa_sparse_attention", "split": "hidden", "params": {"seq_lens": [40], "h": 2, "dc": 16, "dr": 4, "k": 16, "index_hi": 2, "index_di": 8}}
 ]
}`

func tinyDSA(t testing.TB) *manifests.Recipe {
	t.Helper()
	r, err := manifests.ParseRecipe("tiny-dsa", []byte(tinyDSARecipe))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestControlsTinyDSA(t *testing.T) {
	r := tinyDSA(t)
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Jobs: 2, Splits: []string{"public", "benchmark"}})
	checkControls(t, filepath.Join(dir, r.Name), m)
}

// TestDSADeterministic: --jobs 1 and --jobs 2 give one digest, pinned in
// testdata/tiny-dsa.digest (refreshed only with -update).
func TestDSADeterministic(t *testing.T) {
	r := tinyDSA(t)
	var digests []string
	for _, jobs := range []int{1, 2} {
		m := buildTo(t, r, t.TempDir(), Options{Jobs: jobs, Splits: []string{"public", "benchmark", "hidden"}, Secret: secret})
		digests = append(digests, m.Digest)
	}
	if digests[0] != digests[1] {
		t.Fatalf("digests differ across jobs: %v", digests)
	}
	pin := filepath.Join("testdata", "tiny-dsa.digest")
	if *update {
		os.WriteFile(pin, []byte(digests[0]+"\n"), 0o644)
	}
	want, err := os.ReadFile(pin)
	if err != nil {
		t.Fatal(err)
	}
	if got := digests[0]; got != strings.TrimSpace(string(want)) {
		t.Errorf("digest of the tiny-dsa suite = %s, pinned %s", got, want)
	}
}

// dsaLongRecipe has sequences long enough for the build's parallel paths:
// keys quantized by several workers, an indexer sequence of several key
// chunks scored in parallel (paged and ragged), index caches and MLA
// caches filled in several batches while the golden runs. Its pinned
// digest (testdata/dsa-long.digest) was made by 4b0fe84, before those
// paths existed.
const dsaLongRecipe = `{
 "name": "dsa-long", "version": "0.1.0", "spec_version": 1, "seed": 12,
 "cases": [
  {"id": "ix-long", "op": "dsa_indexer", "split": "public", "params": {"seq_lens": [5000, 300], "hi": 8, "di": 32, "k": 128, "shuffle": true, "shared_pages": 1}},
  {"id": "ix-long-margin", "op": "dsa_indexer", "split": "public", "params": {"seq_lens": [3000], "hi": 4, "di": 16, "k": 64, "margin": 0.01}},
  {"id": "ix-long-ragged", "op": "dsa_indexer", "split": "public", "params": {"layout": "ragged", "ctx_lens": [4000], "query_lens": [2], "hi": 4, "di": 16, "k": 64}},
  {"id": "sa-long", "op": "dsa_sparse_attention", "split": "public", "params": {"seq_lens": [20000], "h": 4, "dc": 64, "dr": 16, "k": 256, "index_hi": 4, "index_di": 16, "extra_blocks": 3, "shuffle": true}}
 ]
}`

func TestDSALongDeterministic(t *testing.T) {
	r, err := manifests.ParseRecipe("dsa-long", []byte(dsaLongRecipe))
	if err != nil {
		t.Fatal(err)
	}
	checkPinnedDigest(t, r, "dsa-long.digest", Options{})
}

// TestDSAControlMatrix logs which controls each DSA case has and checks
// that every case has a positive control beside its negatives (the
// verdicts themselves are TestControlsTinyDSA's).
func TestDSAControlMatrix(t *testing.T) {
	r := tinyDSA(t)
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Jobs: 2, Splits: []string{"public", "benchmark"}})
	neg, pos := 0, 0
	for i := range m.Cases {
		c := &m.Cases[i]
		ctl, err := Controls(filepath.Join(dir, r.Name), c)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		p := 0
		for _, k := range ctl {
			ok, _, err := Judge(filepath.Join(dir, r.Name), c, k)
			if err != nil {
				t.Fatal(err)
			}
			v := "REJECTED"
			if ok {
				v = "ACCEPTED"
			}
			names = append(names, k.Name+"="+v)
			if k.Pass {
				p++
				pos++
			} else {
				neg++
			}
		}
		if p == 0 {
			t.Errorf("%s: no positive control", c.ID)
		}
		t.Logf("%s (%s): %s", c.ID, c.Op, strings.Join(names, " "))
	}
	t.Logf("%d cases: %d negative and %d positive controls", len(m.Cases), neg, pos)
}

// BenchmarkBuildStage5DSA builds the whole stage5-dsa public split
// (generation, goldens, encoding, sha256; no disk), SetBytes = its bytes.
func BenchmarkBuildStage5DSA(b *testing.B) {
	r, err := manifests.LookupSuite("stage5-dsa")
	if err != nil {
		b.Fatal(err)
	}
	var bytes int64
	b.ReportAllocs()
	for b.Loop() {
		m, err := Build(context.Background(), r, HashSink{}, Options{Splits: []string{manifests.SplitPublic}})
		if err != nil {
			b.Fatal(err)
		}
		bytes = 0
		for _, c := range m.Cases {
			for _, t := range c.Tensors {
				bytes += t.Bytes
			}
		}
	}
	b.SetBytes(bytes)
}

// TestDSAIndexerMemoryPerSequence: the heap of a paged indexer case of 64
// sequences stays far below its index cache: the cache streams block by
// block and the golden holds one sequence's pages at a time (docs/spec.md
// §8b). A build that holds the cache whole exceeds the bound.
func TestDSAIndexerMemoryPerSequence(t *testing.T) {
	const seqs, l, shared = 64, 4096, 2
	params, _ := json.Marshal(map[string]any{"seq_lens": slices.Repeat([]int{l}, seqs), "hi": 4, "di": 128, "k": 64, "shuffle": true, "shared_pages": shared})
	r := &manifests.Recipe{Name: "mem", Version: "1", SpecVersion: 1, Cases: []manifests.RecipeCase{{ID: "ix", Op: "dsa_indexer", Split: "public", Params: params}}}
	peak, base, err := peakHeap(2*time.Millisecond, 2, func() error {
		_, err := Build(context.Background(), r, HashSink{}, Options{Jobs: 1})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cache := (seqs*l/dsaPS - (seqs-1)*shared) * 132 * dsaPS // bytes; a shared block once
	if peak > uint64(cache/2) {
		t.Errorf("peak heap %d KiB for an index cache of %d KiB: memory scales with the cache, not a sequence", peak>>10, cache>>10)
	}
	t.Logf("peak heap %d KiB for an index cache of %d KiB (%d KiB in use before)", peak>>10, cache>>10, base>>10)
}

// eachBlock returns the error of the lowest failing block whatever the
// worker count (chunks are handed out dynamically).
func TestDSAEachBlockFirstError(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	k := &dsaKeys{di: 4}
	for _, procs := range []int{1, 3, 8} {
		runtime.GOMAXPROCS(procs)
		scratch := make([]*dsaKeyScratch, procs)
		for w := range scratch {
			scratch[w] = k.scratch()
		}
		var ran atomic.Int32
		err := eachBlock(200, scratch, func(i int, sc *dsaKeyScratch) error {
			ran.Add(1)
			if sc == nil {
				return fmt.Errorf("block %d: no scratch", i)
			}
			if i == 37 || i == 150 || i == 151 {
				return fmt.Errorf("block %d failed", i)
			}
			return nil
		})
		if err == nil || err.Error() != "block 37 failed" {
			t.Fatalf("GOMAXPROCS %d: error %v, want block 37's", procs, err)
		}
		if ran.Load() < 38 {
			t.Fatalf("GOMAXPROCS %d: only %d blocks ran", procs, ran.Load())
		}
	}
}

// The case of the most planned bytes goes first (the first of equals),
// the rest keep recipe order; one job or one case gets no head start.
func TestHeadFirst(t *testing.T) {
	plans := func(bytes ...int64) []*casePlan {
		var ps []*casePlan
		for _, b := range bytes {
			ps = append(ps, &casePlan{bytes: b})
		}
		return ps
	}
	for _, tc := range []struct {
		name      string
		bytes     []int64
		jobs      int
		wantOrder []int
		wantHead  int
	}{
		{"largest last", []int64{5, 1, 9}, 4, []int{2, 0, 1}, 2},
		{"largest first", []int64{9, 1, 5}, 4, []int{0, 1, 2}, 0},
		{"equal: first of them", []int64{1, 9, 9}, 2, []int{1, 0, 2}, 1},
		{"one job", []int64{5, 1, 9}, 1, []int{0, 1, 2}, -1},
		{"one case", []int64{5}, 8, []int{0}, -1},
	} {
		order, head := headFirst(plans(tc.bytes...), tc.jobs)
		if !slices.Equal(order, tc.wantOrder) || head != tc.wantHead {
			t.Errorf("%s: headFirst = %v, %d; want %v, %d", tc.name, order, head, tc.wantOrder, tc.wantHead)
		}
	}
}

// The head start of a sparse-attention case lasts until its ckv cache
// opens (the plan's lead): the signal comes once, with q_nope and q_pe
// already written and ckv_cache the tensor being opened.
func TestHeadLeadDSAAttention(t *testing.T) {
	r := tinyDSA(t)
	var rc manifests.RecipeCase
	for _, c := range r.Cases {
		if c.ID == "sa" {
			rc = c
		}
	}
	plan, err := planCase(rc)
	if err != nil {
		t.Fatal(err)
	}
	if plan.lead <= 0 || plan.lead >= plan.bytes {
		t.Fatalf("lead %d, want in (0, %d)", plan.lead, plan.bytes)
	}
	var signals int
	var before []string
	cc := &caseCtx{ctx: context.Background(), id: rc.ID, seed: CaseSeed(r, rc, nil), tols: plan.tols, sink: HashSink{},
		onBytes: func(int64) {}, tick: func() {}, lead: plan.lead}
	cc.started = func() {
		signals++
		if signals == 1 {
			for _, x := range cc.tensors {
				before = append(before, x.Name)
			}
		}
	}
	if err := plan.build(cc); err != nil {
		t.Fatal(err)
	}
	if signals != 1 {
		t.Fatalf("%d head signals, want 1", signals)
	}
	if want := []string{"q_nope", "q_pe"}; !slices.Equal(before, want) {
		t.Errorf("signal after %v, want after %v (at ckv_cache)", before, want)
	}
}

// Without a lead the signal comes with the first tensor; with one, only
// with a tensor of at least lead bytes.
func TestHeadLeadThreshold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lead  int64
		sizes []int64 // float32 elements of the tensors opened in turn
		want  int     // tensors opened when the first signal came (0: none)
	}{
		{"no lead: first tensor", 0, []int64{1, 1000}, 1},
		{"lead: the large tensor", 4000, []int64{1, 10, 1000, 5}, 3},
		{"lead never reached", 4001, []int64{1, 1000}, 0},
	} {
		opened, at := 0, 0
		cc := &caseCtx{ctx: context.Background(), id: "c", sink: HashSink{}, onBytes: func(int64) {}, tick: func() {}, lead: tc.lead}
		cc.started = func() {
			if at == 0 {
				at = opened + 1
			}
		}
		for i, n := range tc.sizes {
			tw, err := cc.createFile(tensorSpec{name: fmt.Sprintf("t%d", i), role: roleInput, dtype: "float32", shape: []int64{n}})
			if err != nil {
				t.Fatal(err)
			}
			tw.abort()
			opened++
		}
		if at != tc.want {
			t.Errorf("%s: signal at tensor %d, want %d", tc.name, at, tc.want)
		}
	}
}

// TestDSAIndexCacheRoundingKernels: on stage5-dsa's ic-fp32 (22 codes
// where the conventions differ) two index-cache writers written here from
// the spec, independent of package golden's quantizer, both pass: one
// rounding e4m3(k/sc) once from the exact quotient, one rounding the
// float32 quotient fl32(k/sc) as vLLM's kernel does. A writer off by one
// code where both agree fails, as does one taking neither code where they
// differ (docs/spec.md §8a).
func TestDSAIndexCacheRoundingKernels(t *testing.T) {
	r, err := manifests.LookupSuite("stage5-dsa")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Jobs: 1, Cases: []string{"ic-fp32"}})
	c := &m.Cases[0]
	bdir := filepath.Join(dir, r.Name)
	d := caseData{dir: bdir, c: c}
	k, err := d.f32("k")
	if err != nil {
		t.Fatal(err)
	}
	sm, err := d.i32("slot_mapping")
	if err != nil {
		t.Fatal(err)
	}
	in, _, err := d.floats("index_cache")
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := d.floats("index_cache_out")
	const di, bs = 128, 64
	writer := func(f32div bool) []float64 {
		out := slices.Clone(in)
		for tk, s := range sm {
			if s < 0 {
				continue
			}
			row := k[tk*di : (tk+1)*di]
			var amax float32
			for _, x := range row {
				amax = max(amax, float32(math.Abs(float64(x))))
			}
			sc := max(amax, float32(1e-4)) / 448 // float32, as the spec's fl32
			base := int(s)/bs*(bs*(di+4)) + int(s)%bs*di
			for dd, x := range row {
				q := new(big.Rat).Quo(new(big.Rat).SetFloat64(float64(x)), new(big.Rat).SetFloat64(float64(sc)))
				if f32div {
					q.SetFloat64(float64(x / sc))
				}
				out[base+dd] = float64(e4m3Nearest(q))
			}
			sb := math.Float32bits(sc)
			so := int(s)/bs*(bs*(di+4)) + bs*di + 4*(int(s)%bs)
			for i := range 4 {
				out[so+i] = float64(byte(sb >> (8 * i)))
			}
		}
		return out
	}
	judge := func(name string, got []float64) bool {
		rep, err := JudgeOutput(bdir, c, "index_cache_out", got)
		if err != nil {
			t.Fatal(err)
		}
		alt := rep.Checks[len(rep.Checks)-1]
		t.Logf("%s: %s, %v of %d differing codes taken from the alternative, failed: %v", name, rep.Status, alt.Observed, alt.Of, rep.Failed)
		return rep.Status == compare.Pass
	}
	once, div := writer(false), writer(true)
	nOnce, nDiv := 0, 0
	agree, differ := -1, -1
	for i := range want {
		if once[i] != want[i] {
			nOnce++
			differ = i
		}
		if div[i] != want[i] {
			nDiv++
		}
		if once[i] == want[i] && want[i] != in[i] && agree < 0 {
			agree = i
		}
	}
	if nDiv != 0 || nOnce != 22 {
		t.Errorf("float32-division writer differs from the golden at %d bytes, one-rounding at %d; want 0 and 22", nDiv, nOnce)
	}
	if !judge("one rounding", once) || !judge("float32 division", div) {
		t.Error("a correct writer was rejected")
	}
	off := slices.Clone(div)
	off[agree]++
	neither := slices.Clone(once)
	neither[differ] += once[differ] - want[differ]
	if judge("one code off where both agree", off) || judge("neither code where they differ", neither) {
		t.Error("a wrong writer was accepted")
	}
}

// e4m3Nearest rounds the exact value q to the nearest float8_e4m3fn code
// (ties to the even code), saturating at 448, by search over the exact
// values of the codes (ascending with the code).
func e4m3Nearest(q *big.Rat) byte {
	sign := byte(0)
	if q.Sign() < 0 {
		sign = 0x80
		q = new(big.Rat).Neg(q)
	}
	vals := e4m3Rats()
	hi := sort.Search(len(vals), func(i int) bool { return vals[i].Cmp(q) >= 0 })
	if hi == len(vals) {
		return sign | 0x7e // saturate
	}
	if hi == 0 || vals[hi].Cmp(q) == 0 {
		return sign | byte(hi)
	}
	dl := new(big.Rat).Sub(q, vals[hi-1])
	dh := new(big.Rat).Sub(vals[hi], q)
	switch c := dl.Cmp(dh); {
	case c < 0, c == 0 && (hi-1)&1 == 0:
		return sign | byte(hi-1)
	}
	return sign | byte(hi)
}

// e4m3Rats are the values of codes 0..0x7e: subnormal m*2^-9, normal
// (1 + m/8)*2^(e-7).
var e4m3Rats = sync.OnceValue(func() []*big.Rat {
	var v []*big.Rat
	for code := 0; code <= 0x7e; code++ {
		e, m := code>>3, int64(code&7)
		r := new(big.Rat).SetFrac64(m, 512)
		if e > 0 {
			r.SetFrac64(8+m, 8)
			r.Mul(r, new(big.Rat).SetFloat64(math.Ldexp(1, e-7)))
		}
		v = append(v, r)
	}
	return v
})
