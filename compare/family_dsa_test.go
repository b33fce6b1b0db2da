package compare

import (
	"errors"
	"math"
	"testing"

	"github.com/goldset/goldset/golden"
)

func dsaTol(t *testing.T, f Family, dt string) Tolerance {
	t.Helper()
	tol, err := f.Tolerance(dt)
	if err != nil {
		t.Fatal(err)
	}
	return tol
}

func i2f(v ...int32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestDSASelectionFamily: one row of 5 visible tokens, k = 3. Scores
// 4, 3, 2, 2+1e-5, 1 (A = 4): kth = 2+1e-5 at position 3, gap 1e-5 < 2*eps
// (eps = 2^-12*4 ~ 9.8e-4), so position 2 may replace 3; position 4
// (score 1) may not.
func TestDSASelectionFamily(t *testing.T) {
	tol := dsaTol(t, DSASelection, "int32")
	scores := []float64{4, 3, 2, 2 + 1e-5, 1}
	info := golden.DSARowInfo{Visible: 5, Kth: 2 + 1e-5, Gap: 1e-5, A: 4}
	want := i2f(0, 1, 3)
	data := func() *DSAData {
		return &DSAData{Rows: []golden.DSASelectionRow{{Scores: scores, Info: info}}}
	}
	for _, c := range []struct {
		name string
		got  []float64
		pass bool
	}{
		{"golden", want, true},
		{"any order", i2f(3, 0, 1), true},
		{"tie inside the band", i2f(0, 1, 2), true},
		{"outside the band", i2f(0, 1, 4), false},
		{"duplicate", i2f(0, 1, 1), false},
		{"one missing", i2f(0, 1, -1), false},
		{"unreachable", i2f(0, 1, 5), false},
		{"NaN entry", []float64{0, 1, math.NaN()}, false},
	} {
		r, err := Compare(want, c.got, []int64{1, 3}, tol, Options{Name: "topk", DSA: data()})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() != c.pass {
			t.Errorf("%s: status %s, want pass=%v (%v)", c.name, r.Status, c.pass, r.Failed)
		}
	}
	// A gap wider than 2*eps forces the golden set: the same swap fails.
	wide := data()
	wide.Rows[0].Scores = []float64{4, 3, 1.9, 2.1, 1}
	wide.Rows[0].Info = golden.DSARowInfo{Visible: 5, Kth: 2.1, Gap: 0.2, A: 4}
	if r, _ := Compare(want, i2f(0, 1, 2), []int64{1, 3}, tol, Options{DSA: wide}); r.OK() {
		t.Error("a swap across a wide gap passed")
	}
	// bf16 logits widen the band to 2^-7*A = 0.03125: 2.1 vs 2.09 ties.
	bf := data()
	bf.Rows[0].Scores = []float64{4, 3, 2.09, 2.1, 1}
	bf.Rows[0].Info = golden.DSARowInfo{Visible: 5, Kth: 2.1, Gap: 0.01, A: 4}
	if r, _ := Compare(want, i2f(0, 1, 2), []int64{1, 3}, tol, Options{DSA: bf}); r.OK() {
		t.Error("float32 band accepted a 0.01 tie")
	}
	bf.LogitsDType = BFloat16
	if r, _ := Compare(want, i2f(0, 1, 2), []int64{1, 3}, tol, Options{DSA: bf}); !r.OK() {
		t.Errorf("bf16 band rejected a 0.01 tie: %v", r.Failed)
	}
	// Ragged rows: indices are kv rows, the window starts at the offset.
	rg := data()
	rg.Offsets = []int32{10}
	if r, _ := Compare(i2f(10, 11, 13), i2f(13, 11, 10), []int64{1, 3}, tol, Options{DSA: rg}); !r.OK() {
		t.Errorf("ragged golden rejected: %v", r.Failed)
	}
	if r, _ := Compare(i2f(10, 11, 13), i2f(9, 11, 10), []int64{1, 3}, tol, Options{DSA: rg}); r.OK() {
		t.Error("ragged index before the window (which would map to -1) passed")
	}
	// Fewer visible tokens than k: exactly the visible ones, then -1.
	short := &DSAData{Rows: []golden.DSASelectionRow{{Scores: []float64{1, 2}, Info: golden.DSARowInfo{Visible: 2, Kth: 1, Gap: math.Inf(1), A: 2}}}}
	for got, pass := range map[[3]int32]bool{{1, 0, -1}: true, {-1, 1, 0}: true, {1, -1, -1}: false, {1, 0, 2}: false} {
		if r, _ := Compare(i2f(1, 0, -1), i2f(got[:]...), []int64{1, 3}, tol, Options{DSA: short}); r.OK() != pass {
			t.Errorf("short row %v: %s, want pass=%v", got, r.Status, pass)
		}
	}
	// No data: an error, not a pass.
	if _, err := Compare(want, want, []int64{1, 3}, tol, Options{}); !errors.Is(err, ErrShape) {
		t.Errorf("missing dsa data: %v", err)
	}
}

func TestDSAScaledAndLSE(t *testing.T) {
	lt := dsaTol(t, DSALogits, Float32)
	ninf := math.Inf(-1)
	g := []float64{1, 2, ninf}
	data := &DSAData{RowScale: []float64{4}} // A = 4: allowance 2^-12*4 + 2^-20*|g|
	for _, c := range []struct {
		name string
		c    []float64
		pass bool
	}{
		{"golden", g, true},
		{"inside", []float64{1 + 9e-4, 2, ninf}, true},
		{"outside", []float64{1 + 1.1e-3, 2, ninf}, false},
		{"mask lost", []float64{1, 2, 0}, false},
		{"mask added", []float64{ninf, 2, ninf}, false},
	} {
		r, err := Compare(g, c.c, []int64{1, 3}, lt, Options{DSA: data})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() != c.pass {
			t.Errorf("logits %s: %s, want pass=%v", c.name, r.Status, c.pass)
		}
	}
	at := dsaTol(t, DSAAttention, BFloat16)
	ad := &DSAData{RowScale: []float64{1, 1}, Exact: []bool{false, true}}
	gv := []float64{0.5, -0.25, 0.125, 0.75}
	if r, _ := Compare(gv, []float64{0.5 + 0x1p-9, -0.25, 0.125, 0.75}, []int64{2, 2}, at, Options{DSA: ad}); !r.OK() {
		t.Errorf("attention within bounds rejected: %v", r.Failed)
	}
	if r, _ := Compare(gv, []float64{0.5, -0.25, 0.125 + 0x1p-9, 0.75}, []int64{2, 2}, at, Options{DSA: ad}); r.OK() {
		t.Error("a one-index row off by 2^-9 passed")
	}
	ls := dsaTol(t, DSALSE, Float32)
	gl := []float64{8, ninf}
	for _, c := range []struct {
		name string
		c    []float64
		pass bool
	}{
		{"golden", gl, true},
		{"+inf on the empty row (FlashMLA)", []float64{8, math.Inf(1)}, true},
		{"within 2^-13*8", []float64{8 + 9e-4, ninf}, true},
		{"outside", []float64{8 + 1.1e-3, ninf}, false},
		{"finite on the empty row", []float64{8, 0}, false},
		{"inf on a real row", []float64{math.Inf(1), ninf}, false},
	} {
		r, err := Compare(gl, c.c, []int64{2}, ls, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() != c.pass {
			t.Errorf("lse %s: %s, want pass=%v", c.name, r.Status, c.pass)
		}
	}
	if err := (Tolerance{Mode: ModeDSA}).Validate(); !errors.Is(err, ErrTolerance) {
		t.Errorf("mode dsa without a rule: %v", err)
	}
	if _, err := DSASelection.Tolerance(Float32); !errors.Is(err, ErrTolerance) {
		t.Errorf("selection family on float32: %v", err)
	}
}

// FuzzCompareDSA: arbitrary values, row facts and rules never panic; an
// error wraps ErrShape or ErrTolerance; the status agrees with Failed.
func FuzzCompareDSA(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 3, 1, 0, 2}, uint8(0), 4.0, 1.0, 0.5, uint8(2), false)
	f.Add([]byte{0, 255, 2, 7, 3, 1, 9, 2}, uint8(1), 1.0, math.Inf(1), 0.0, uint8(1), true)
	f.Add([]byte{1, 2, 200, 4}, uint8(3), 0.0, 0.0, 0.0, uint8(0), true)
	f.Fuzz(func(t *testing.T, data []byte, rule uint8, a, gap, kth float64, offs uint8, physical bool) {
		n := len(data) / 2
		if n == 0 {
			return
		}
		g, c := make([]float64, n), make([]float64, n)
		for i := range n {
			g[i], c[i] = float64(int8(data[i])), float64(int8(data[n+i]))
		}
		fam := []Family{DSASelection, DSALogits, DSAAttention, DSALSE}[rule%4]
		dt := []string{Int32, Float32, BFloat16, Float32}[rule%4]
		tol, err := fam.Tolerance(dt)
		if err != nil {
			t.Fatal(err)
		}
		scores := make([]float64, int(data[0])%9)
		for i := range scores {
			scores[i] = float64(data[i%len(data)])
		}
		row := golden.DSASelectionRow{Scores: scores, Info: golden.DSARowInfo{Visible: len(scores), Kth: kth, Gap: gap, A: a}}
		if physical {
			row.Space, row.PS, row.BlockTable = golden.DSAPhysical, 4, []int32{int32(data[0] % 3), 2, 5}
		}
		d := &DSAData{Rows: []golden.DSASelectionRow{row}, RowScale: []float64{a}, Exact: []bool{physical}, LogitsDType: []string{"", BFloat16, Float16}[offs%3]}
		if offs%2 == 1 {
			d.Offsets = []int32{int32(offs)}
		}
		r, err := Compare(g, c, []int64{1, int64(n)}, tol, Options{DSA: d})
		if err != nil {
			if !errors.Is(err, ErrShape) && !errors.Is(err, ErrTolerance) && !errors.Is(err, golden.ErrInvalidParams) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if (r.Status == Pass) != (len(r.Failed) == 0) {
			t.Fatalf("status %s with failed %q", r.Status, r.Failed)
		}
	})
}
