package compare

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"testing"
)

// fuzzInput builds golden and candidate from data: 5 bytes per element,
// float32 bits of the golden and a code k; the candidate is the golden
// moved by k-128 float32 ulps (k = 0: a NaN, k = 255: +Inf), so that
// near-equal pairs, and therefore passes, are common.
func fuzzInput(data []byte) (g, c []float64) {
	for len(data) >= 5 && len(g) < 96 {
		bits := binary.LittleEndian.Uint32(data)
		k := data[4]
		data = data[5:]
		gv := math.Float32frombits(bits)
		var cv float64
		switch k {
		case 0:
			cv = math.NaN()
		case 255:
			cv = math.Inf(1)
		default:
			cv = float64(math.Float32frombits(uint32(int64(bits) + int64(k) - 128)))
		}
		g, c = append(g, float64(gv)), append(c, cv)
	}
	return g, c
}

func FuzzCompare(f *testing.F) {
	f.Add([]byte("\x00\x00\x80\x3f\x80\x00\x00\x00\x40\x81\x00\x00\x80\xbf\x7f\x00\x00\x00\x00\x80"), uint8(0), uint8(0), 1e-3, 6e-8, 1e-3, uint8(1), uint8(2), false)
	f.Add([]byte("\x00\x00\x80\x3f\x80\x00\x00\x00\x40\x00\x00\x00\x80\xff\xff\x00\x00\xc0\x7f\x80"), uint8(1), uint8(2), 0.0, 0.0, 0.0, uint8(0), uint8(1), true)
	f.Add([]byte("\x00\x00\x80\x3f\x80\x00\x00\x00\x40\x80\x00\x00\x80\xbf\x7f\x00\x00\x40\x40\x81"), uint8(2), uint8(4), 0.0, 0.0, 0.0, uint8(1), uint8(2), false)
	f.Fuzz(func(t *testing.T, data []byte, modeSel, dtSel uint8, rtol, atol, rmsf float64, rowAxes, rowsSel uint8, rowRules bool) {
		g, c := fuzzInput(data)
		rows := int64(rowsSel%4) + 1
		if int64(len(g))%rows != 0 {
			g, c = g[:int64(len(g))/rows*rows], c[:int64(len(g))/rows*rows]
		}
		shape := []int64{rows, int64(len(g)) / rows}
		tol := Tolerance{
			Mode:  []string{ModeAllclose, ModeExact, ModeSet}[modeSel%3],
			DType: []string{Float16, BFloat16, Float32, Float64, Int32}[dtSel%5],
			RTol:  rtol, ATol: atol, ATolRMSFactor: rmsf, RowAxes: int(rowAxes % 4),
			SetIgnore: []float64{-1},
		}
		if rowRules {
			tol.RowRelL2, tol.RowSum = 1e-3, 2e-3
		}
		r, err := Compare(g, c, shape, tol, Options{})
		if err != nil {
			if !errors.Is(err, ErrTolerance) || tol.Validate() == nil {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("json: %v", err)
		}
		if err := r.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
		if (r.Status == Pass) != (len(r.Failed) == 0) || r.Status != Pass && r.Status != Fail {
			t.Fatalf("status %s with failed %q", r.Status, r.Failed)
		}
		rowLen, nrows, _ := rowGeometry(shape, tol.RowAxes, int64(len(g)))
		hold := true
		for row := range nrows {
			gr, cr := g[row*rowLen:(row+1)*rowLen], c[row*rowLen:(row+1)*rowLen]
			switch tol.Mode {
			case ModeExact:
				for i := range gr {
					hold = hold && math.Float64bits(gr[i]) == math.Float64bits(cr[i])
				}
			case ModeSet:
				keep := func(v []float64) []float64 {
					var out []float64
					for _, x := range v {
						if x != -1 {
							out = append(out, x)
						}
					}
					slices.Sort(out)
					return out
				}
				gs, cs := keep(gr), keep(cr)
				hold = hold && len(gs) == len(cs)
				for i := 0; hold && i < len(gs); i++ {
					hold = gs[i] == cs[i] // a NaN never equals
				}
			default:
				atolRow := tol.ATol
				if tol.ATolRMSFactor > 0 {
					var s float64
					var k int
					for _, v := range gr {
						if !math.IsNaN(v) && !math.IsInf(v, 0) {
							s += float64(v * v)
							k++
						}
					}
					if k > 0 {
						atolRow += float64(tol.ATolRMSFactor * math.Sqrt(s/float64(k)))
					}
				}
				for i, gv := range gr {
					cv := cr[i]
					gFin := !math.IsNaN(gv) && !math.IsInf(gv, 0)
					cFin := !math.IsNaN(cv) && !math.IsInf(cv, 0)
					switch {
					case gFin && cFin:
						hold = hold && math.Abs(cv-gv) <= atolRow+float64(tol.RTol*math.Abs(gv))
					default:
						hold = hold && (gv == cv || math.IsNaN(gv) && math.IsNaN(cv))
					}
				}
			}
		}
		if r.Status == Pass && !hold {
			t.Fatalf("PASS although an element rule fails: %+v", r)
		}
		if !rowRules && tol.Mode != ModeSet && (r.Status == Pass) != hold {
			t.Fatalf("status %s, element rules hold = %v: %q", r.Status, hold, r.Failed)
		}
		if tol.Mode == ModeSet && (r.Status == Pass) != hold {
			t.Fatalf("set status %s, sets equal = %v", r.Status, hold)
		}
	})
}
