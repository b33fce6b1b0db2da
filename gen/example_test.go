package gen_test

import (
	"fmt"
	"math"

	"github.com/goldset/goldset/gen"
)

func ExampleNewStream() {
	s := gen.NewStream(2024, "paged_attention/L=129", "query")
	fmt.Printf("%#x\n", s.Key()[0])
	// Output:
	// 0x4b9ab1d40b466ea
}

func ExampleNormal() {
	s := gen.NewStream(1, "matmul/M=1", "A")
	a := make([]uint16, 4) // float16 bits
	gen.Normal(s, a, 0, gen.F16, 0.125)
	tail := make([]uint16, 2) // the same values, regenerated at offset 2
	gen.Normal(s, tail, 2, gen.F16, 0.125)
	fmt.Printf("%#04x %#04x\n", a, tail)
	// Output:
	// [0x88c9 0xa82c 0x2c19 0xac10] [0x2c19 0xac10]
}

func ExampleUniform() {
	x := make([]float32, 3)
	gen.Uniform(gen.NewStream(1, "c", "u"), x, 0, gen.F32, -1, 1)
	fmt.Println(x)
	// Output:
	// [0.81119186 -0.65922177 0.8976727]
}

func ExampleInts() {
	v := make([]int32, 6)
	gen.Ints(gen.NewStream(1, "c", "ids"), v, 0, 0, 10)
	fmt.Println(v)
	// Output:
	// [5 5 0 9 5 4]
}

func ExampleParallel() {
	s := gen.NewStream(1, "c", "big")
	dst := make([]uint16, 100000)
	gen.Parallel(4, 0, len(dst), func(lo, hi int) {
		gen.Normal(s, dst[lo:hi], int64(lo), gen.BF16, 1)
	})
	one := make([]uint16, len(dst))
	gen.Normal(s, one, 0, gen.BF16, 1)
	same := true
	for i := range dst {
		same = same && dst[i] == one[i]
	}
	fmt.Println(same)
	// Output: true
}

func ExampleStream_Rand() {
	r := gen.NewStream(1, "c", "misc").Rand()
	fmt.Println(r.IntN(100), r.Float64() < 1, r.Uint64() != 0)
	// Output:
	// 3 true true
}

func ExampleRand_Perm() {
	fmt.Println(gen.NewStream(1, "c", "block_tables").Rand().Perm(8))
	// Output:
	// [5 0 2 3 7 4 6 1]
}

func ExampleRand_Choice() {
	fmt.Println(gen.NewStream(1, "c", "rows").Rand().Choice(1000, 4))
	// Output:
	// [989 846 72 107]
}

func ExampleStore() {
	h := make([]uint16, 3)
	gen.Store(h, gen.F16, []float64{1, 65504, 1e6})
	back := make([]float64, 3)
	gen.Load(back, h, gen.F16)
	fmt.Printf("%#04x %v\n", h, back)
	// Output:
	// [0x3c00 0x7bff 0x7c00] [1 65504 +Inf]
}

func ExampleFill() {
	b := make([]uint16, 2)
	gen.Fill(b, gen.BF16, math.NaN())
	f := make([]float32, 2)
	gen.Fill(f, gen.F32, math.Inf(-1))
	fmt.Printf("%#04x %v %v\n", b, f, gen.BF16)
	// Output:
	// [0x7fc0 0x7fc0] [-Inf -Inf] bfloat16
}

func ExampleDrawLens() {
	lens, rescale, err := gen.DrawLens(gen.NewStream(1, "pa", "context_lens"), 6, gen.LenDraw{Mean: 1000, Sigma: 1, Max: 4096})
	fmt.Println(lens, rescale > 0, err)
	// Output:
	// [2730 464 1747 593 187 279] true <nil>
}

func ExampleNewPagedLayout() {
	spec := gen.LayoutSpec{Seqs: 2, BlockSize: 16, Lens: []int32{20, 40}, MaxBlocks: 4, Pad: gen.PadPoison, SharedPairs: 1}
	l, err := gen.NewPagedLayout(spec, gen.Stream{}, gen.NewStream(1, "pa", "block_tables"))
	if err != nil {
		fmt.Println(err)
		return
	}
	blk, off := l.Slot(1, 39)
	fmt.Println(l.NumBlocks, l.Tables, l.Live, l.PoisonBlock, l.NumLogical(1), blk, off)
	_, err = gen.NewPagedLayout(gen.LayoutSpec{Seqs: 1, BlockSize: 16, MaxBlocks: 1, Lens: []int32{17}}, gen.Stream{}, gen.Stream{})
	fmt.Println(err)
	// Output:
	// 5 [1 2 3 3 1 0 4 3] [16 16 4 0 8] 3 3 4 7
	// gen: paged layout: context length 17 > MAXB*BS = 1*16: invalid generator spec
}

func ExampleSlotMapping() {
	m, err := gen.SlotMapping(gen.NewStream(1, "rc", "slot_mapping"), gen.SlotSpec{Tokens: 8, NumSlots: 64, NegFrac: 0.4, ForceSlot0: true})
	fmt.Println(m, err)
	// Output:
	// [-2147483648 -1 41 -7 11 4 54 0] <nil>
}

func ExampleOutlierRow() {
	row := make([]uint16, 4)
	gen.OutlierRow(gen.NewStream(1, "softmax", "X"), row, 0, gen.F16, gen.OutlierHigh, gen.OutlierMagnitude(gen.F16))
	// fp16 spacing at 6e4 is 32: the N(0,1) noise rounds away (a row of tied maxima).
	v := make([]float64, 4)
	gen.Load(v, row, gen.F16)
	fmt.Println(v)
	// Output:
	// [60000 60000 60000 60000]
}

func ExampleMaskLeading() {
	x := []float32{1, 2, 3, 4, 5, 6}
	gen.MaskLeading(x, gen.F32, 3, 2) // two rows of 3, first 2 of each -inf
	fmt.Println(x)
	// Output: [-Inf -Inf 3 -Inf -Inf 6]
}

func ExamplePoisonCache() {
	l, _ := gen.NewPagedLayout(gen.LayoutSpec{Seqs: 1, BlockSize: 2, Lens: []int32{3}, ExtraBlocks: 1}, gen.Stream{}, gen.NewStream(1, "c", "bt"))
	cache := make([]float32, l.NumBlocks*l.BlockSize) // Hkv*D = 1
	gen.PoisonCache(cache, gen.F32, l, 1)
	fmt.Println(l.Tables, l.Live, cache)
	// Output:
	// [0 1] [2 1 0] [0 0 0 NaN NaN NaN]
}

func ExampleNeedleKey() {
	q := []float64{1, 0, 0, 1} // G=2 query rows, D=2
	key := make([]float64, 2)
	err := gen.NeedleKey(key, q, 2, 1, 10)
	fmt.Printf("%.4f %v\n", key, err)
	// Output:
	// [10.0000 10.0000] <nil>
}

func ExamplePlantNeedle() {
	l, _ := gen.NewPagedLayout(gen.LayoutSpec{Seqs: 1, BlockSize: 16, Lens: []int32{100}}, gen.Stream{}, gen.NewStream(1, "c", "bt"))
	h := gen.Heads{Q: 4, KV: 2, D: 32}
	q := make([]uint16, h.Q*h.D)
	gen.Normal(gen.NewStream(1, "c", "query"), q, 0, gen.F16, 1)
	kc := make([]uint16, l.NumBlocks*l.BlockSize*h.KV*h.D)
	gen.Normal(gen.NewStream(1, "c", "key_cache"), kc, 0, gen.F16, 1)
	logit, err := gen.PlantNeedle(kc, q, gen.F16, l, h, 0, 57, 1/math.Sqrt(32), 12)
	fmt.Printf("%.3f %v\n", logit, err)
	// Output:
	// 11.999 <nil>
}

func ExamplePlantQuest() {
	l, _ := gen.NewPagedLayout(gen.LayoutSpec{Seqs: 1, BlockSize: 16, Lens: []int32{200}}, gen.Stream{}, gen.NewStream(1, "c", "bt"))
	h := gen.Heads{Q: 4, KV: 1, D: 32}
	q := make([]float32, h.Q*h.D)
	gen.Normal(gen.NewStream(1, "c", "query"), q, 0, gen.F32, 1)
	kc := make([]float32, l.NumBlocks*l.BlockSize*h.KV*h.D)
	gen.Normal(gen.NewStream(1, "c", "key_cache"), kc, 0, gen.F32, 1)
	margin, err := gen.PlantQuest(kc, q, gen.F32, l, h, 0, 0, []int{2, 7}, 1)
	scores := make([]float64, 4*l.NumLogical(0))
	gen.QuestScores(scores, kc, q, gen.F32, l, h, 0, 0)
	best := 0
	for i, v := range scores[:l.NumLogical(0)] { // head 0
		if v > scores[best] {
			best = i
		}
	}
	fmt.Printf("%v %v %d\n", margin >= 1, err, best)
	// Output:
	// true <nil> 2
}

func ExampleQuestScores() {
	l, _ := gen.NewPagedLayout(gen.LayoutSpec{Seqs: 1, BlockSize: 2, Lens: []int32{3}}, gen.Stream{}, gen.NewStream(1, "c", "bt"))
	h := gen.Heads{Q: 1, KV: 1, D: 2}
	q := []float64{1, -1}
	kc := make([]float64, l.NumBlocks*l.BlockSize*h.D)
	// Logical block 0 holds tokens (1, 2) and (3, -4); block 1 holds (0, 5).
	for j, k := range [][]float64{{1, 2}, {3, -4}, {0, 5}} {
		p, o := l.Slot(0, j)
		copy(kc[(p*l.BlockSize+o)*h.D:], k)
	}
	scores := make([]float64, l.NumLogical(0))
	gen.QuestScores(scores, kc, q, gen.F64, l, h, 0, 0)
	fmt.Println(scores) // block 0: max(1,3) + max(-2,4) = 7; block 1: 0 + -5
	// Output: [7 -5]
}
