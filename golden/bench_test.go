package golden_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/npy"
)

func randF32(r *rand.Rand, n int, sd float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * sd)
	}
	return x
}

// decodeCase builds a Qwen3-8B decode batch: Hq 32, Hkv 8, D 128, BS 128,
// seqs sequences of l tokens each on shuffled physical blocks.
func decodeCase(seqs, l int) (q, kc, vc []float32, bt, cl []int32, dims golden.AttentionDims) {
	r := rand.New(rand.NewPCG(7, 8))
	bs := 128
	maxb := (l + bs - 1) / bs
	dims = golden.AttentionDims{B: seqs, Hq: 32, Hkv: 8, D: 128, NB: seqs * maxb, BS: bs, MAXB: maxb}
	q = randF32(r, dims.B*dims.Hq*dims.D, 1)
	kc = randF32(r, dims.NB*bs*dims.Hkv*dims.D, 1)
	vc = randF32(r, dims.NB*bs*dims.Hkv*dims.D, 1)
	perm := r.Perm(dims.NB)
	bt = make([]int32, seqs*maxb)
	for i := range bt {
		bt[i] = int32(perm[i])
	}
	cl = make([]int32, seqs)
	for i := range cl {
		cl[i] = int32(l)
	}
	return
}

func BenchmarkPagedAttentionQwen3Decode(b *testing.B) {
	const seqs, l = 8, 8192
	q, kc, vc, bt, cl, dims := decodeCase(seqs, l)
	out := make([]float64, dims.B*dims.Hq*dims.D)
	lse := make([]float64, dims.B*dims.Hq)
	scale := 1 / math.Sqrt(float64(dims.D))
	// bf16-equivalent bytes of K and V actually read.
	b.SetBytes(int64(seqs * l * dims.Hkv * dims.D * 2 * 2))
	b.ReportAllocs()
	for b.Loop() {
		if err := golden.PagedAttention(out, lse, q, kc, vc, bt, cl, dims, scale); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatmul(b *testing.B) {
	for _, s := range []struct {
		m, k, n int
		nk      bool
	}{{1, 4096, 4096, false}, {1, 4096, 4096, true}, {512, 4096, 1024, false}, {512, 4096, 1024, true}, {4096, 4096, 4096, true}} {
		layout := "KN"
		if s.nk {
			layout = "NK"
		}
		b.Run(fmt.Sprintf("%dx%dx%d_%s", s.m, s.k, s.n, layout), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			a, w := randF32(r, s.m*s.k, 1), randF32(r, s.k*s.n, 0.01)
			c := make([]float64, s.m*s.n)
			b.SetBytes(int64(4 * (s.m*s.k + s.k*s.n)))
			b.ReportAllocs()
			cpu0 := cpuSeconds()
			for b.Loop() {
				golden.Matmul(c, a, w, s.m, s.k, s.n, s.nk)
			}
			b.ReportMetric(2*float64(s.m*s.k*s.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := cpuSeconds() - cpu0; cpu > 0 {
				b.ReportMetric(2*float64(s.m*s.k*s.n)*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
			}
		})
	}
}

func BenchmarkSoftmax151936(b *testing.B) {
	const m, n = 4, 151936
	x := randF32(rand.New(rand.NewPCG(3, 4)), m*n, 5)
	y := make([]float64, m*n)
	mx, sm := make([]float64, m), make([]float64, m)
	b.SetBytes(4 * m * n)
	b.ReportAllocs()
	for b.Loop() {
		golden.Softmax(y, mx, sm, x, m, n)
	}
}

// BenchmarkPagedAttentionHalfDecode is one Qwen3-8B decode sequence of 8192
// tokens (Hq 32, Hkv 8, D 128, BS 128) with float16 caches, with the
// AVX-512 attention tiles (vec, where the CPU has them) and without.
func BenchmarkPagedAttentionHalfDecode(b *testing.B) {
	const seqs, l = 1, 8192
	q, kc, vc, bt, cl, dims := decodeCase(seqs, l)
	kh := make([]uint16, len(kc))
	vh := make([]uint16, len(vc))
	npy.F16sFromF32s(kh, kc)
	npy.F16sFromF32s(vh, vc)
	out := make([]float64, dims.B*dims.Hq*dims.D)
	lse := make([]float64, dims.B*dims.Hq)
	scale := 1 / math.Sqrt(float64(dims.D))
	for _, vec := range []bool{true, false} {
		name := "scalar"
		if vec {
			name = "vec"
		}
		b.Run(name, func(b *testing.B) {
			defer golden.SetAttnVec(golden.SetAttnVec(vec))
			b.SetBytes(int64(seqs * l * dims.Hkv * dims.D * 2 * 2)) // K and V rows read
			b.ReportAllocs()
			for b.Loop() {
				if err := golden.PagedAttentionHalf(out, lse, q, kh, vh, golden.F16, bt, cl, dims, scale); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnifiedAttentionPrefill times the float64 golden of a prefill
// chunk over a cached prefix (Qwen3-8B: Hq 32, Hkv 8, D 128, BS 16, bf16
// caches): one sequence of context 4096 whose last 64 tokens are new, as a
// chunked-prefill step attends them. SetBytes counts the K and V bytes
// each query token reads; GFLOP counts 4*Hq*D per (query token, key)
// pair (q.k and p*v, a multiply and an add each).
func BenchmarkUnifiedAttentionPrefill(b *testing.B) {
	const ctx, chunk, bs = 4096, 64, 16
	r := rand.New(rand.NewPCG(9, 10))
	nb := ctx / bs
	dims := golden.UnifiedDims{T: chunk, S: 1, Hq: 32, Hkv: 8, D: 128, NB: nb, BS: bs, MAXB: nb}
	q := randF32(r, dims.T*dims.Hq*dims.D, 1)
	kh := make([]uint16, nb*bs*dims.Hkv*dims.D)
	vh := make([]uint16, len(kh))
	npy.BF16sFromF32s(kh, randF32(r, len(kh), 1))
	npy.BF16sFromF32s(vh, randF32(r, len(vh), 1))
	bt := make([]int32, nb)
	for i, p := range r.Perm(nb) {
		bt[i] = int32(p)
	}
	out := make([]float64, dims.T*dims.Hq*dims.D)
	lse := make([]float64, dims.T*dims.Hq)
	var pairs int64 // (query token, key) pairs
	for i := range chunk {
		pairs += int64(ctx - chunk + i + 1)
	}
	flop := float64(pairs) * 4 * float64(dims.Hq*dims.D)
	b.SetBytes(pairs * int64(dims.Hkv*dims.D) * 2 * 2)
	b.ReportAllocs()
	cpu0 := cpuSeconds()
	for b.Loop() {
		if err := golden.UnifiedAttentionHalf(out, lse, q, kh, vh, golden.BF16, bt, []int32{ctx}, []int32{0, chunk}, dims, 1/math.Sqrt(128)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu := cpuSeconds() - cpu0; cpu > 0 {
		b.ReportMetric(flop*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
	}
}

// blockFeed serves one sequence of a paged float16 cache to
// PagedAttentionFeed: as slices of the cache, or copied into one reused
// block buffer (a producer's window of one block, kept in cache).
type blockFeed struct {
	kc, vc, buf []uint16
	bt          []int32
	be          int
	copy        bool
}

func (f *blockFeed) Block(value bool, list []int, n int) ([]float32, []uint16) {
	c := f.kc
	if value {
		c = f.vc
	}
	p := int(f.bt[list[n]])
	blk := c[p*f.be : (p+1)*f.be]
	if !f.copy {
		return nil, blk
	}
	copy(f.buf, blk)
	return nil, f.buf
}

// BenchmarkPagedAttentionFeed is BenchmarkPagedAttentionHalfDecode's
// sequence through PagedAttentionFeed, with a reused AttentionScratch
// (no allocation per call): "slices" reads the blocks in place, "window"
// from one reused block buffer, as the suite's regenerating feed does.
func BenchmarkPagedAttentionFeed(b *testing.B) {
	const seqs, l = 1, 8192
	q, kc, vc, bt, _, dims := decodeCase(seqs, l)
	be := dims.BS * dims.Hkv * dims.D
	f := &blockFeed{kc: make([]uint16, len(kc)), vc: make([]uint16, len(vc)), buf: make([]uint16, be), bt: bt, be: be}
	npy.F16sFromF32s(f.kc, kc)
	npy.F16sFromF32s(f.vc, vc)
	out := make([]float64, dims.Hq*dims.D)
	lse := make([]float64, dims.Hq)
	scale := 1 / math.Sqrt(float64(dims.D))
	var sc golden.AttentionScratch
	sc.Reserve(dims.Hq, l)
	for _, copyBlocks := range []bool{false, true} {
		name := "slices"
		if copyBlocks {
			name = "window"
		}
		b.Run(name, func(b *testing.B) {
			f.copy = copyBlocks
			b.SetBytes(int64(l * dims.Hkv * dims.D * 2 * 2)) // K and V rows read
			b.ReportAllocs()
			for b.Loop() {
				if err := golden.PagedAttentionFeed(out, lse, q, f, golden.F16, l, dims, scale, &sc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
