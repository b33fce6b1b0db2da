package compare_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/npy"
)

func ExampleFamily_Tolerance() {
	for _, o := range []struct {
		f     compare.Family
		dtype string
	}{
		{compare.AttentionLike, "float16"},
		{compare.SoftmaxLike, "bfloat16"},
		{compare.LSE, "float32"},
		{compare.Exact.WithBasis("exact/cache"), "bfloat16"},
		{compare.SetWithPadding(-1).WithBasis("set/selection"), "int32"},
	} {
		tol, err := o.f.Tolerance(o.dtype)
		if err != nil {
			fmt.Println(err)
			continue
		}
		b, _ := json.Marshal(tol)
		fmt.Println(string(b))
	}
	_, err := compare.MatmulLike.Tolerance("int32")
	fmt.Println(err)
	// Output:
	// {"mode":"allclose","dtype":"float16","rtol":0.01,"atol":1.1920928955078125e-7,"atol_rms_factor":0.01,"row_rel_l2":0.002,"basis":"attention/float16"}
	// {"mode":"allclose","dtype":"bfloat16","rtol":0.008,"atol":1.1754943508222875e-38,"row_rel_l2":0.008,"row_sum":0.01,"basis":"softmax/bfloat16"}
	// {"mode":"allclose","dtype":"float32","rtol":0.00001,"atol":0.0001,"basis":"lse"}
	// {"mode":"exact","dtype":"bfloat16","basis":"exact/cache"}
	// {"mode":"set","dtype":"int32","set_ignore":[-1],"basis":"set/selection"}
	// compare: invalid tolerance: family matmul grades floating outputs, not int32
}

func ExampleCompare() {
	// A [2, 4] fp16 attention output; the candidate is off at [1, 2].
	golden := []float64{0.5, -0.25, 0.125, 1, 0.75, -0.5, 0.25, -1}
	candidate := []float64{0.5, -0.25, 0.125, 1, 0.75, -0.5, 0.3, -1}
	tol, _ := compare.AttentionLike.Tolerance("float16")
	r, err := compare.Compare(golden, candidate, []int64{2, 4}, tol, compare.Options{Name: "out"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Status, r.FirstMismatch, r.MismatchCount)
	fmt.Println(r.Failed[0])
	// Output:
	// FAIL [1 2] 1
	// elementwise |c-g| <= 1.19e-07 + 0.01*rms(row) + 0.01*|g| violated at 1 of 8 elements
}

func ExampleReport_WriteText() {
	golden := []float64{0, 3, 7, -1, 1, 2, -1, -1}
	candidate := []float64{7, 0, 3, -1, 2, 5, -1, -1}
	tol, _ := compare.SetWithPadding(-1).Tolerance("int32")
	r, _ := compare.Compare(golden, candidate, []int64{1, 2, 4}, tol, compare.Options{Name: "selected"})
	r.WriteText(os.Stdout)
	// Output:
	// selected [1, 2, 4] int32 set: FAIL
	//   FAIL set same multiset per row, ignoring [-1], order free violated at 1 of 2 rows
	//   rows differing 1/2, values missing 1, extra 1, first row [0, 1], worst row [0, 1]
}

func ExampleDecode() {
	// bfloat16 is stored as <u2 bits; the manifest's dtype says bfloat16.
	data := []byte{0x80, 0x3f, 0xc0, 0xbf, 0x80, 0x7f}
	v, err := compare.Decode(npy.Uint16, true, data)
	fmt.Println(v, err)
	// Output:
	// [1 -1.5 +Inf] <nil>
}
