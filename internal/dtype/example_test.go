package dtype_test

import (
	"fmt"

	"github.com/goldset/goldset/internal/dtype"
)

func ExampleParse() {
	d, err := dtype.Parse("float8_e4m3fn")
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Name(), d.Descr(), d.ItemSize(), d.Precision(), d.SmallestNormal(), d.MaxFinite())
	_, err = dtype.Parse("fp8")
	fmt.Println(err)
	// Output:
	// float8_e4m3fn |u1 1 4 0.015625 448
	// unknown dtype "fp8" (known: float16, bfloat16, float32, float64, int32, int64, uint8, float8_e4m3fn, float4_e2m1fn_x2, float8_e8m0fnu)
}

func ExampleDType_Round() {
	for _, x := range []float64{1.0625, 464, 1e9} {
		b := dtype.Float8E4M3FN.Round(x)
		fmt.Printf("e4m3 %g -> %#02x = %g\n", x, b, dtype.Float8E4M3FN.Widen(b))
	}
	for _, x := range []float64{3, 0.1} {
		b := dtype.Float8E8M0.Round(x)
		fmt.Printf("e8m0 %g -> %d = %g\n", x, b, dtype.Float8E8M0.Widen(b))
	}
	// Output:
	// e4m3 1.0625 -> 0x38 = 1
	// e4m3 464 -> 0x7e = 448
	// e4m3 1e+09 -> 0x7e = 448
	// e8m0 3 -> 129 = 4
	// e8m0 0.1 -> 124 = 0.125
}

func ExampleDType_Encode() {
	// Four E2M1 elements in two bytes: element 0 in the low nibble.
	codes := make([]byte, 2)
	dtype.Float4E2M1x2.Encode(codes, []float64{0.5, -6, 3, 100})
	fmt.Printf("% x\n", codes)
	vals := make([]float64, 4)
	dtype.Float4E2M1x2.Decode(vals, codes)
	fmt.Println(vals)
	// Output:
	// f1 75
	// [0.5 -6 3 6]
}
