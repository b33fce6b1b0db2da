package compare

import (
	"errors"
	"testing"
)

// TestAlt: a candidate equal to the golden or, where they differ, to the
// alternative passes; a value that is neither fails, also where the
// alternative equals the golden; a group passes only as a whole.
func TestAlt(t *testing.T) {
	g := []float64{10, 20, 30, 40, 50, 60, 70, 80}
	alt := []float64{10, 21, 30, 40, 50, 60, 69, 80} // differs at 1 and 6
	exact := tolOf(Exact.WithBasis("exact/x").WithAlt("x_alt", 1), Uint8)
	grouped := tolOf(Exact.WithAlt("x_alt", 4), Uint8)
	value := tolOf(MXValue.WithAlt("x_alt", 4), Float32)
	for _, tc := range []struct {
		name string
		tol  Tolerance
		c    []float64
		pass bool
		acc  float64
	}{
		{"golden", exact, g, true, 0},
		{"alternative", exact, alt, true, 2},
		{"mixed", exact, []float64{10, 21, 30, 40, 50, 60, 70, 80}, true, 1},
		{"off elsewhere", exact, []float64{10, 21, 31, 40, 50, 60, 69, 80}, false, 2},
		{"neither", exact, []float64{10, 22, 30, 40, 50, 60, 70, 80}, false, 0},
		{"group whole", grouped, alt, true, 2},
		{"group mixed", grouped, []float64{10, 21, 30, 40, 50, 60, 70, 80}, true, 1},
		{"group partial", grouped, []float64{10, 21, 31, 40, 50, 60, 70, 80}, false, 0},
		{"allclose mode", value, []float64{10, 21, 30, 40, 50, 60, 69, 80}, true, 2},
	} {
		r, err := Compare(g, tc.c, []int64{2, 4}, tc.tol, Options{Name: tc.name, Alt: alt})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		last := r.Checks[len(r.Checks)-1]
		if (r.Status == Pass) != tc.pass || last.Rule != "alternative" || float64(last.Observed) != tc.acc || last.Of != 2 {
			t.Errorf("%s: %s %v, alternative check %+v; want pass %v, %v accepted of 2", tc.name, r.Status, r.Failed, last, tc.pass, tc.acc)
		}
	}
	// the caller's candidate is not modified
	c := []float64{10, 21, 30, 40, 50, 60, 69, 80}
	if _, err := Compare(g, c, []int64{8}, exact, Options{Alt: alt}); err != nil || c[1] != 21 {
		t.Errorf("candidate modified: %v %v", c, err)
	}
	if _, err := Compare(g, g, []int64{8}, exact, Options{}); !errors.Is(err, ErrTolerance) {
		t.Errorf("no alternative given: %v", err)
	}
	if _, err := Compare(g, g, []int64{8}, exact, Options{Alt: alt[:7]}); !errors.Is(err, ErrShape) {
		t.Errorf("short alternative: %v", err)
	}
	for _, bad := range []Tolerance{
		{Mode: ModeSet, Alt: "x"},
		{Mode: ModeExact, AltGroup: 2},
		{Mode: ModeExact, Alt: "x", AltGroup: -1},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrTolerance) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
