package golden

import (
	"math"
	"slices"

	"github.com/goldset/goldset/internal/detmath"
)

// Negative controls (docs/spec.md §6). The functions below compute deliberately
// wrong or lower-precision results with the same signatures as the goldens,
// so the comparator can be shown to reject broken kernels (the Wrong*,
// TailUnmasked, SkipBlock and NoMax variants) and to accept honest
// float32 kernels (the F32 variants).

// PagedAttentionWrongGQA is PagedAttention with query head h reading KV
// head h % Hkv instead of h / G.
func PagedAttentionWrongGQA(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens []int32, dims AttentionDims, scale float64) error {
	return pagedAttention(out, lse, q, f32View(kCache), f32View(vCache), blockTables, contextLens, dims, scale, attnOpts{wrongGQA: true})
}

// PagedAttentionTailUnmasked is PagedAttention that also attends the BS-L%BS
// slots past L in the last block (all BS slots of every block read).
func PagedAttentionTailUnmasked(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens []int32, dims AttentionDims, scale float64) error {
	return pagedAttention(out, lse, q, f32View(kCache), f32View(vCache), blockTables, contextLens, dims, scale, attnOpts{tailUnmasked: true})
}

// SparseAttentionWrongGQA is SparseAttention with query head h reading KV
// head h % Hkv (its selection row is unchanged).
func SparseAttentionWrongGQA(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens, selected []int32, dims AttentionDims, p QuestParams, scale float64) error {
	return sparseAttention(out, lse, q, f32View(kCache), f32View(vCache), blockTables, contextLens, selected, dims, p, scale, attnOpts{wrongGQA: true}, nil)
}

// SparseAttentionTailUnmasked is SparseAttention that attends all BS slots
// of each selected block, the last one included.
func SparseAttentionTailUnmasked(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens, selected []int32, dims AttentionDims, p QuestParams, scale float64) error {
	return sparseAttention(out, lse, q, f32View(kCache), f32View(vCache), blockTables, contextLens, selected, dims, p, scale, attnOpts{tailUnmasked: true}, nil)
}

// SparseAttentionSkipBlock is SparseAttention that, for each (sequence,
// query head), leaves out the selected block carrying the largest softmax
// mass (ties: lowest block index), the most damaging single omission. A
// row with a single block then attends nothing: out 0, lse -Inf.
func SparseAttentionSkipBlock(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens, selected []int32, dims AttentionDims, p QuestParams, scale float64) error {
	heaviest := func(b, h int, blocks []int) int {
		return heaviestBlock(q, kCache, blockTables, contextLens, dims, b, h, blocks, scale)
	}
	return sparseAttention(out, lse, q, f32View(kCache), f32View(vCache), blockTables, contextLens, selected, dims, p, scale, attnOpts{}, heaviest)
}

func heaviestBlock(q, kCache []float32, blockTables, contextLens []int32, dims AttentionDims, b, h int, blocks []int, scale float64) int {
	d, l := dims.D, int(contextLens[b])
	qh := make([]float64, d)
	for e, x := range q[(b*dims.Hq+h)*d : (b*dims.Hq+h+1)*d] {
		qh[e] = float64(x)
	}
	kvh := h / dims.G()
	var scores [][]float64
	m := math.Inf(-1)
	for _, i := range blocks {
		base := int(blockTables[b*dims.MAXB+i]) * dims.BS * dims.Hkv * d
		var s []float64
		for off := range blockTokens(i, l, dims.BS, false) {
			o := base + (off*dims.Hkv+kvh)*d
			x := scale * dot(qh, kCache[o:o+d])
			s = append(s, x)
			m = max(m, x)
		}
		scores = append(scores, s)
	}
	best, bestMass := -1, -1.0
	for n, s := range scores {
		var mass float64
		for _, x := range s {
			mass += detmath.Exp(x - m)
		}
		if mass > bestMass {
			best, bestMass = blocks[n], mass
		}
	}
	return best
}

// MatmulF32 is Matmul accumulated in float32: dst[i,j] = float32 sum over
// p in order of float32(a[i,p]*b[p,j]) (each product rounded to float32).
// An honest low-precision reference that must pass the tolerances.
func MatmulF32(dst []float64, a, b []float32, m, k, n int, bNK bool) {
	checkMatmul(dst, a, b, m, k, n)
	parallelFor(numWorkers(m), m, func(_, i int) {
		ar := a[i*k : (i+1)*k]
		for j := range n {
			var s float32
			for p, x := range ar {
				var y float32
				if bNK {
					y = b[j*k+p]
				} else {
					y = b[p*n+j]
				}
				s += float32(x * y)
			}
			dst[i*n+j] = float64(s)
		}
	})
}

func exp32(x float32) float32 { return float32(detmath.Exp(float64(x))) }

// SoftmaxF32 is Softmax in float32 arithmetic (max subtracted; exp
// rounded to float32, float32 sum, float32 division). Honest; must pass.
func SoftmaxF32(dst, rowMax, rowSum []float64, x []float32, m, n int) {
	checkSoftmax(dst, rowMax, rowSum, x, m, n)
	parallelFor(numWorkers(m), m, func(_, i int) {
		xr, y := x[i*n:(i+1)*n], dst[i*n:(i+1)*n]
		mx := float32(math.Inf(-1))
		for _, v := range xr {
			mx = max(mx, v)
		}
		var sum float32
		if !math.IsInf(float64(mx), -1) {
			for _, v := range xr {
				sum += exp32(v - mx)
			}
		}
		for j, v := range xr {
			if sum == 0 {
				y[j] = 0
			} else {
				y[j] = float64(exp32(v-mx) / sum)
			}
		}
		if rowMax != nil {
			rowMax[i] = float64(mx)
		}
		if rowSum != nil {
			rowSum[i] = float64(sum)
		}
	})
}

// SoftmaxNoMaxF32 is a broken softmax: exp(x) / sum(exp(x)) in float32
// without subtracting the max, so rows with logits above ~88.7 overflow to
// Inf/Inf = NaN. rowMax reports the true max, rowSum the float32 sum of
// exp(x) (wrong whenever the max is not 0).
func SoftmaxNoMaxF32(dst, rowMax, rowSum []float64, x []float32, m, n int) {
	checkSoftmax(dst, rowMax, rowSum, x, m, n)
	parallelFor(numWorkers(m), m, func(_, i int) {
		xr, y := x[i*n:(i+1)*n], dst[i*n:(i+1)*n]
		mx := float32(math.Inf(-1))
		var sum float32
		for _, v := range xr {
			mx = max(mx, v)
			sum += exp32(v)
		}
		for j, v := range xr {
			y[j] = float64(exp32(v) / sum)
		}
		if rowMax != nil {
			rowMax[i] = float64(mx)
		}
		if rowSum != nil {
			rowSum[i] = float64(sum)
		}
	})
}

// PagedAttentionF32 is PagedAttention computed the way a float32 kernel
// does it: float32 dot products and scale, then an online softmax over
// blocks of BS tokens (running max, rescaled float32 sum and accumulator).
// Honest; must pass the attention tolerances.
func PagedAttentionF32(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens []int32, dims AttentionDims, scale float64) error {
	if err := dims.check(); err != nil {
		return err
	}
	dims.checkCaseLens(q, len(kCache), len(vCache), blockTables, contextLens)
	checkAttnOut(out, lse, dims)
	if err := dims.checkSeqs(blockTables, contextLens); err != nil {
		return err
	}
	parallelFor(numWorkers(dims.B*dims.Hq), dims.B*dims.Hq, func(_, u int) {
		b := u / dims.Hq
		blocks := make([]int, numBlocks(int(contextLens[b]), dims.BS))
		for i := range blocks {
			blocks[i] = i
		}
		attendF32(out, lse, q, kCache, vCache, blockTables, contextLens, dims, b, u%dims.Hq, blocks, scale)
	})
	return nil
}

// SparseAttentionF32 is SparseAttention computed like PagedAttentionF32.
func SparseAttentionF32(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens, selected []int32, dims AttentionDims, p QuestParams, scale float64) error {
	// Validate exactly as the golden does (and fill out, overwritten below).
	if err := SparseAttention(out, lse, q, kCache, vCache, blockTables, contextLens, selected, dims, p, scale); err != nil {
		return err
	}
	hsel := p.Granularity.Hsel(dims)
	parallelFor(numWorkers(dims.B*dims.Hq), dims.B*dims.Hq, func(_, u int) {
		b, h := u/dims.Hq, u%dims.Hq
		r := p.Granularity.selRow(h, dims)
		var blocks []int
		for _, i := range selected[(b*hsel+r)*p.K : (b*hsel+r+1)*p.K] {
			if i >= 0 {
				blocks = append(blocks, int(i))
			}
		}
		slices.Sort(blocks)
		attendF32(out, lse, q, kCache, vCache, blockTables, contextLens, dims, b, h, blocks, scale)
	})
	return nil
}

func attendF32(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens []int32, dims AttentionDims, b, h int, blocks []int, scale float64) {
	d, l := dims.D, int(contextLens[b])
	qh := q[(b*dims.Hq+h)*d : (b*dims.Hq+h+1)*d]
	kvh := h / dims.G()
	sc := float32(scale)
	m := float32(math.Inf(-1))
	var sum float32
	acc := make([]float32, d)
	s := make([]float32, dims.BS)
	for _, i := range blocks {
		base := int(blockTables[b*dims.MAXB+i]) * dims.BS * dims.Hkv * d
		n := blockTokens(i, l, dims.BS, false)
		mb := float32(math.Inf(-1))
		for off := range n {
			o := base + (off*dims.Hkv+kvh)*d
			var x float32
			for e, k := range kCache[o : o+d] {
				x += float32(qh[e] * k)
			}
			s[off] = float32(x * sc)
			mb = max(mb, s[off])
		}
		mNew := max(m, mb)
		alpha := exp32(m - mNew) // exp(-Inf) = 0 on the first block
		sum = float32(sum * alpha)
		for e := range acc {
			acc[e] = float32(acc[e] * alpha)
		}
		for off := range n {
			p := exp32(s[off] - mNew)
			sum += p
			o := base + (off*dims.Hkv+kvh)*d
			for e, v := range vCache[o : o+d] {
				acc[e] += float32(p * v)
			}
		}
		m = mNew
	}
	for e, a := range acc {
		out[(b*dims.Hq+h)*d+e] = float64(a / sum)
	}
	lse[b*dims.Hq+h] = float64(m + float32(detmath.Log(float64(sum))))
}

// MatmulHalfAccumulate is a broken matmul for the margins (docs/spec.md
// §13c): float32 products summed in order into an accumulator rounded by
// round (the output's half type) after every addition, as a kernel with
// an fp16 or bf16 accumulator does.
func MatmulHalfAccumulate(dst []float64, a, b []float32, m, k, n int, bNK bool, round func(float64) float64) {
	checkMatmul(dst, a, b, m, k, n)
	for i := range m {
		ar := a[i*k : (i+1)*k]
		for j := range n {
			s := 0.0
			for p, x := range ar {
				y := b[p*n+j]
				if bNK {
					y = b[j*k+p]
				}
				s = round(s + float64(float32(x*y)))
			}
			dst[i*n+j] = s
		}
	}
}
