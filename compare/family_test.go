package compare

import (
	"errors"
	"testing"
)

// tolOf is f's tolerance for dtype; the tests only ask for rows that exist.
func tolOf(f Family, dtype string) Tolerance {
	t, err := f.Tolerance(dtype)
	if err != nil {
		panic(err)
	}
	return t
}

func TestFamilyRows(t *testing.T) {
	// every family has a row for every floating dtype; none falls back
	floats := []Family{MatmulLike, SoftmaxLike, AttentionLike, LSE, Scores, RowSum, RowMax}
	for _, f := range floats {
		for _, dt := range []string{Float16, BFloat16, Float32, Float64} {
			tol, err := f.Tolerance(dt)
			if err != nil || tol.Mode != ModeAllclose || tol.DType != dt || tol.Validate() != nil {
				t.Errorf("%s/%s: %+v %v", f.Name(), dt, tol, err)
			}
		}
		for _, dt := range []string{Int32, Uint8, "bool", "float8", ""} {
			if _, err := f.Tolerance(dt); !errors.Is(err, ErrTolerance) {
				t.Errorf("%s/%q: err %v, want ErrTolerance", f.Name(), dt, err)
			}
		}
	}
	for _, tc := range []struct {
		f          Family
		dt, mode   string
		basis      string
		wantIgnore int
	}{
		{Exact, Int32, ModeExact, "exact", 0},
		{Exact.WithBasis("exact/cache"), "<f2", ModeExact, "exact/cache", 0},
		{SetWithPadding(-1), Int32, ModeSet, "set", 1},
		{SetWithPadding(-1).WithBasis("set/selection"), Int32, ModeSet, "set/selection", 1},
	} {
		tol, err := tc.f.Tolerance(tc.dt)
		if err != nil || tol.Mode != tc.mode || tol.Basis != tc.basis || len(tol.SetIgnore) != tc.wantIgnore || tol.Validate() != nil {
			t.Errorf("%s %s: %+v %v", tc.f.Name(), tc.dt, tol, err)
		}
	}
	if tol := tolOf(MatmulLike, Float16); tol.Basis != "matmul/float16" || tol.RTol != 1e-3 || tol.ATol != 0x1p-23 {
		t.Errorf("matmul fp16: %+v", tol)
	}
	if tol := tolOf(Scores.WithBasis("quest_scores"), Float32); tol.Basis != "quest_scores" || tol.ATolRMSFactor != 1e-4 {
		t.Errorf("scores: %+v", tol)
	}
}
