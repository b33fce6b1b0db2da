package golden_test

import (
	"fmt"
	"math"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/dtype"
)

// Quantize three keys into an index cache, score them for one decode
// query (two index heads) and keep the top 2.
func ExampleDSAIndexer() {
	const di = 2
	cache := make([]byte, golden.DSABlockBytes(di))
	keys := []float32{448, 0, 2, 4, -1, 2}
	cd := golden.DSACacheDims{T: 3, DI: di, NB: 1}
	if err := golden.DSAIndexCache(cache, keys, []int32{0, 1, 2}, cache, cd, golden.DSAScaleUE8M0); err != nil {
		panic(err)
	}
	one := dtype.E4M3FromF64(1)
	d := golden.DSAIndexerDims{B: 1, NN: 1, HI: 2, DI: di, NB: 1, MAXB: 1, K: 2}
	q := []uint8{one, 0, 0, one} // head 0 reads dim 0, head 1 dim 1
	w := []float32{1, -0.5}
	logits := make([]float64, 64)
	sel, slots := make([]int32, 2), make([]int32, 2)
	info := make([]golden.DSARowInfo, 1)
	if err := golden.DSAIndexer(logits, sel, slots, info, q, w, cache, []int32{0}, []int32{3}, d); err != nil {
		panic(err)
	}
	fmt.Println(logits[:3], math.IsInf(logits[3], -1))
	fmt.Println(sel, slots)
	fmt.Printf("kth %g gap %g A %g\n", info[0].Kth, info[0].Gap, info[0].A)
	// Output:
	// [448 0 -1] true
	// [0 1] [0 1]
	// kth 0 gap 1 A 448
}

// Judge a kernel's top-k row with the tie band.
func ExampleDSASelectionCheck() {
	scores := []float64{5, 3, 3, 1} // tokens 1 and 2 tie at the boundary
	info := golden.DSARowInfo{Visible: 4, Kth: 3, Gap: 0, A: 5}
	want := []int32{0, 1}
	for _, got := range [][]int32{{1, 0}, {2, 0}, {0, 3}, {0, 0}} {
		err := golden.DSASelectionCheck(golden.DSASelectionRow{Got: got, Want: want, Scores: scores, Info: info}, 0x1p-12)
		fmt.Println(got, err == nil)
	}
	// Output:
	// [1 0] true
	// [2 0] true
	// [0 3] false
	// [0 0] false
}
