package golden_test

import (
	"fmt"
	"math"

	"github.com/goldset/goldset/golden"
)

func ExampleMatmul() {
	a := []float32{1, 2, 3, 4}       // [2, 2]
	b := []float32{1, 0, 1, 1, 2, 3} // [2, 3]
	c := make([]float64, 6)
	golden.Matmul(c, a, b, 2, 2, 3, false)
	fmt.Println(c)
	// Output: [3 4 7 7 8 15]
}

func ExampleSoftmax() {
	x := []float32{0, 0, float32(math.Inf(-1)), 0} // one row of 4
	y := make([]float64, 4)
	mx, sum := make([]float64, 1), make([]float64, 1)
	golden.Softmax(y, mx, sum, x, 1, 4)
	fmt.Printf("%.4f max %v sum %v\n", y, mx[0], sum[0])
	// Output: [0.3333 0.3333 0.0000 0.3333] max 0 sum 3
}

func ExampleReshapeAndCache() {
	// Raw uint16 bits (fp16 NaN sentinel 0x7e01 in the cache) copy exactly.
	dims := golden.CacheDims{T: 2, Hkv: 1, D: 1, NB: 1, BS: 3}
	cache := []uint16{0x7e01, 0x7e01, 0x7e01}
	dk, dv := make([]uint16, 3), make([]uint16, 3)
	key := []uint16{0x3c00, 0x4000} // 1.0, 2.0
	err := golden.ReshapeAndCache(dk, dv, key, key, cache, cache, []int32{2, -1}, dims)
	fmt.Printf("%#04x %v\n", dk, err)
	// Output: [0x7e01 0x7e01 0x3c00] <nil>
}

func ExamplePagedAttention() {
	// One sequence, one head, D=1, two tokens in a block of 4: scores 0 and
	// 0, so out is the mean of the values and lse = log 2.
	dims := golden.AttentionDims{B: 1, Hq: 1, Hkv: 1, D: 1, NB: 1, BS: 4, MAXB: 1}
	nan := float32(math.NaN()) // slots past L are never read
	kc := []float32{0, 0, nan, nan}
	vc := []float32{1, 3, nan, nan}
	out, lse := make([]float64, 1), make([]float64, 1)
	err := golden.PagedAttention(out, lse, []float32{1}, kc, vc, []int32{0}, []int32{2}, dims, 1)
	fmt.Printf("%v %.6f %v\n", out, lse[0], err)
	// Output: [2] 0.693147 <nil>
}

func ExampleSelectBlocks() {
	// nb = 5 blocks, K = 3 with both anchors: blocks 0 and 4, plus the best
	// of 1..3 (block 2, score 7; next best 5: margin 2).
	dims := golden.AttentionDims{B: 1, Hq: 1, Hkv: 1, D: 1, NB: 5, BS: 2, MAXB: 5}
	scores := []float64{0, 5, 7, 1, 0}
	sel := make([]int32, 3)
	margin, ok, err := golden.SelectBlocks(sel, scores, []int32{10}, dims, golden.QuestParams{K: 3, AnchorFirst: true, AnchorLast: true})
	fmt.Println(sel, margin, ok, err)
	// Output: [0 2 4] 2 true <nil>
}

func ExampleBlockMetadata() {
	// One block of 4 with 3 valid tokens (D=1): max/min over those only.
	dims := golden.AttentionDims{B: 1, Hq: 1, Hkv: 1, D: 1, NB: 1, BS: 4, MAXB: 2}
	kc := []float32{2, -1, 5, float32(math.NaN())}
	kmax, kmin := make([]float64, 2), make([]float64, 2)
	err := golden.BlockMetadata(kmax, kmin, kc, []int32{0, -1}, []int32{3}, dims)
	fmt.Println(kmax, kmin, err)
	// Output: [5 0] [-1 0] <nil>
}

func ExampleBlockScores() {
	// q = (1, -2); kmax = (3, 1), kmin = (-1, -4):
	// max(3, -1) + max(-2, 8) = 11.
	dims := golden.AttentionDims{B: 1, Hq: 1, Hkv: 1, D: 2, NB: 1, BS: 4, MAXB: 2}
	scores := make([]float64, 2)
	err := golden.BlockScores(scores, []float32{1, -2}, []float64{3, 1, 0, 0}, []float64{-1, -4, 0, 0}, []int32{4}, dims, golden.QHead)
	fmt.Println(scores, err)
	// Output: [11 -Inf] <nil>
}

func ExampleSparseAttention() {
	// Two blocks of 2 tokens; only block 1 (values 4 and 6) is selected.
	dims := golden.AttentionDims{B: 1, Hq: 1, Hkv: 1, D: 1, NB: 2, BS: 2, MAXB: 2}
	kc := []float32{0, 0, 0, 0}
	vc := []float32{1, 1, 4, 6}
	out, lse := make([]float64, 1), make([]float64, 1)
	p := golden.QuestParams{K: 2}
	err := golden.SparseAttention(out, lse, []float32{1}, kc, vc, []int32{0, 1}, []int32{4}, []int32{1, -1}, dims, p, 1)
	fmt.Println(out, err)
	// Output: [5] <nil>
}

func ExampleUnifiedAttention() {
	// handUnified: one head, D = 1, block size 2. Sequence 0 is a 2-token
	// chunk over a 1-token prefix (L = 3, keys all 0: uniform weights),
	// sequence 1 a decode row, then a zero-length padded request and a
	// padded token. NaN slots and -1 table entries are never read.
	c := handUnified()
	out, lse := make([]float64, 4), make([]float64, 4)
	if err := golden.UnifiedAttention(out, lse, c.q, c.kc, c.vc, c.bt, c.sl, c.qsl, c.dims, 1); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("out %.4f\nlse %.4f\n", out, lse)
	// Output:
	// out [1.5000 2.3333 5.0000 0.0000]
	// lse [0.6931 1.0986 3.0000 0.0000]
}
