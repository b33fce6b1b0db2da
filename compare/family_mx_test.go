package compare

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/goldset/goldset/npy"
)

// TestMXGEMMBound: the S term admits an fp32-sized error on an element
// that cancelled to 0, the same error without S fails, a bound is
// required when the tolerance names one, and the GPU MODE allclose check
// is reported but never decides the status.
func TestMXGEMMBound(t *testing.T) {
	tol, err := MXGEMM.Tolerance(BFloat16)
	if err != nil {
		t.Fatal(err)
	}
	if tol.Bound != "s" || tol.BoundFactor != MXBoundFactor || tol.RTol != 0x1p-8 || tol.ReportAllclose != 1e-2 {
		t.Fatalf("MXGEMM bf16 row: %+v", tol)
	}
	g := []float64{0, 1, -2, 4}
	s := []float64{1000, 1, 2, 4}
	c := []float64{1000 * 0x1p-20, 1, -2, 4} // 2^-20*S: an fp32 kernel's cancellation error, 4x inside 2^-18*S
	shape := []int64{1, 4}
	rep, err := Compare(g, c, shape, tol, Options{Bound: s})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("within 2^-18*S: %v", rep.Failed)
	}
	c[0] = 1000 * 0x1p-17 // twice the bound
	c[1] = 1.5            // breaks allclose(1e-2) too
	if rep, _ = Compare(g, c, shape, tol, Options{Bound: s}); rep.OK() {
		t.Errorf("2x the S bound accepted")
	}
	noS := tol
	noS.Bound, noS.BoundFactor = "", 0
	c = []float64{1000 * 0x1p-20, 1, -2, 4}
	if rep, _ = Compare(g, c, shape, noS, Options{}); rep.OK() {
		t.Errorf("without S the cancelled element's error must fail (the S term is what admits it)")
	}
	if _, err := Compare(g, c, shape, tol, Options{}); !errors.Is(err, ErrTolerance) {
		t.Errorf("bound named, none given: %v", err)
	}
	if _, err := Compare(g, c, shape, tol, Options{Bound: s[:2]}); !errors.Is(err, ErrShape) {
		t.Errorf("short bound: %v", err)
	}
	// A NaN bound adds nothing: it cannot admit an error.
	c[0] = 1
	if rep, _ = Compare(g, c, shape, tol, Options{Bound: []float64{nan(), 1, 2, 4}}); rep.OK() {
		t.Errorf("NaN bound admitted an error")
	}
	// Informative: allclose(1e-2) fails, the graded rules pass.
	g2, c2 := []float64{1e-3, 100}, []float64{1e-3 + 0.02, 100}
	rep, err = Compare(g2, c2, []int64{1, 2}, tol, Options{Bound: []float64{1e6, 100}})
	if err != nil {
		t.Fatal(err)
	}
	var info *Check
	for i := range rep.Checks {
		if rep.Checks[i].Rule == "allclose_gpumode" {
			info = &rep.Checks[i]
		}
	}
	if info == nil || info.Pass || !info.Informative || !rep.OK() || len(rep.Failed) != 0 {
		t.Errorf("allclose_gpumode %+v, status %s, failed %v", info, rep.Status, rep.Failed)
	}
}

func nan() float64 { var z float64; return z / z }

// TestMXValue: codes 0 and 8 (and e4m3 0x00 / 0x80) are equal by value,
// not under MXStrict; any other difference fails.
func TestMXValue(t *testing.T) {
	for _, dt := range []string{"float4_e2m1fn_x2", "float8_e4m3fn", Float32, BFloat16} {
		tol, err := MXValue.Tolerance(dt)
		if err != nil {
			t.Fatal(err)
		}
		strict, _ := MXStrict.Tolerance(dt)
		negZero := func() float64 { z := 0.0; return -z }()
		g, c := []float64{0, 1.5, nan()}, []float64{negZero, 1.5, nan()}
		if rep, _ := Compare(g, c, []int64{3}, tol, Options{}); !rep.OK() {
			t.Errorf("%s: -0 vs +0 rejected by value: %v", dt, rep.Failed)
		}
		if rep, _ := Compare(g, c, []int64{3}, strict, Options{}); rep.OK() {
			t.Errorf("%s: -0 vs +0 accepted under strict", dt)
		}
		c[1] = 2
		if rep, _ := Compare(g, c, []int64{3}, tol, Options{}); rep.OK() {
			t.Errorf("%s: 1.5 vs 2 accepted", dt)
		}
	}
}

// TestReadByteCoded: a |u1 candidate of a float4_e2m1fn_x2 golden is
// decoded two values per byte, low nibble first; another dtype is a
// failed comparison.
func TestReadByteCoded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.npy")
	if err := npy.WriteFile(p, npy.Header{Descr: npy.Uint8, Shape: []int64{1, 2}}, []byte{0x81, 0x7f}); err != nil {
		t.Fatal(err)
	}
	v, err := ReadCandidate(t.Context(), p, "float4_e2m1fn_x2", []int64{1, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.5, func() float64 { z := 0.0; return -z }(), -6, 6}
	for i := range want {
		if v[i] != want[i] || (v[i] == 0 && (1/v[i] > 0) != (1/want[i] > 0)) {
			t.Fatalf("decoded %v, want %v", v, want)
		}
	}
	f := filepath.Join(dir, "f.npy")
	npy.WriteFile(f, npy.Header{Descr: npy.Float32, Shape: []int64{1, 2}}, make([]byte, 8))
	if _, err := ReadCandidate(t.Context(), f, "float8_e8m0fnu", []int64{1, 2}, nil); !errors.Is(err, ErrCandidate) {
		t.Errorf("<f4 for an e8m0 golden: %v", err)
	}
	_ = os.Remove(p)
}
