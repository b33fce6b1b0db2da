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

func ExampleSlotMapping() {
	m, err := gen.SlotMapping(gen.NewStream(1, "rc", "slot_mapping"), gen.SlotSpec{Tokens: 8, NumSlots: 64, NegFrac: 0.4, ForceSlot0: true})
	fmt.Println(m, err)
	// Output:
	// [-2147483648 -1 41 -7 11 4 54 0] <nil>
}
