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

// FuzzAlt: in exact mode with an alternative, a candidate passes exactly
// when every group equals the golden or, as a whole, the alternative (a
// naive oracle over the groups).
func FuzzAlt(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(1), uint8(3))
	f.Add([]byte{0, 0, 1, 1, 2, 2, 3, 3}, uint8(2), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, groupSel, seed uint8) {
		n := min(len(data)/3, 64)
		group := int(groupSel%4) + 1
		g, alt, c := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			// small alphabets so that matches are common
			g[i] = float64(data[3*i] % 4)
			alt[i] = g[i]
			if data[3*i+1]%3 == 0 {
				alt[i] = float64(data[3*i+1]%4 + 4)
			}
			switch data[3*i+2] % 3 {
			case 0:
				c[i] = g[i]
			case 1:
				c[i] = alt[i]
			default:
				c[i] = float64((data[3*i+2] + seed) % 8)
			}
		}
		tol := tolOf(Exact.WithAlt("alt", group), Float32)
		r, err := Compare(g, c, []int64{int64(n)}, tol, Options{Alt: alt})
		if err != nil {
			t.Fatal(err)
		}
		want := true
		for lo := 0; lo < n; lo += group {
			hi := min(lo+group, n)
			isG, isAlt := true, true
			for i := lo; i < hi; i++ {
				isG = isG && c[i] == g[i]
				isAlt = isAlt && c[i] == alt[i]
			}
			want = want && (isG || isAlt)
		}
		if (r.Status == Pass) != want {
			t.Fatalf("group %d g %v alt %v c %v: %s, oracle pass %v", group, g, alt, c, r.Status, want)
		}
	})
}
