package dtype

import (
	"math"
	"testing"
)

// FuzzRoundWiden: for every type, Round is idempotent through Widen (the
// value Round picks is a value of the format, and it rounds to itself), and
// for the byte types Round equals the naive search over the hand tables.
func FuzzRoundWiden(f *testing.F) {
	for _, x := range []float64{0, 1, 464, 5, 3, 0x1p-10, 1e300, -0.25, math.Inf(1), math.NaN(), 0x1.8p127} {
		for _, d := range All() {
			f.Add(uint8(d), x)
		}
	}
	f.Fuzz(func(t *testing.T, typ uint8, x float64) {
		d := DType(typ)
		if !d.Valid() {
			if d.Round(x) != 0 || !math.IsNaN(d.Widen(0)) {
				t.Fatalf("invalid %v gave a result", d)
			}
			return
		}
		r := d.Round(x)
		w := d.Widen(r)
		if math.IsNaN(w) {
			if !math.IsNaN(x) && d != Float8E8M0 && d.IsFloat() {
				t.Fatalf("%v: Round(%v) = %#x is NaN", d, x, r)
			}
			return
		}
		if r2 := d.Round(w); r2 != r {
			t.Fatalf("%v: Round(%v) = %#x widens to %v, which rounds to %#x", d, x, r, w, r2)
		}
		switch d {
		case Float8E4M3FN, Float4E2M1x2, Float8E8M0:
			if nv := naiveRound(d, x); uint64(nv) != r {
				t.Fatalf("%v: Round(%v) = %#x, naive %#x", d, x, r, nv)
			}
		}
		// Encode and Decode agree with Round and Widen.
		src := []float64{x, x}
		buf := make([]byte, 2*d.ItemSize()/d.ElemsPerItem())
		d.Encode(buf, src)
		dst := make([]float64, 2)
		d.Decode(dst, buf)
		if !sameValue(dst[0], w) || !sameValue(dst[1], w) {
			t.Fatalf("%v: Decode(Encode(%v)) = %v, Widen(Round) = %v", d, x, dst, w)
		}
	})
}

// FuzzParse: a name Parse accepts is the type's Name; nothing panics.
func FuzzParse(f *testing.F) {
	for _, d := range All() {
		f.Add(d.Name())
		f.Add(string(d.Descr()))
	}
	f.Add("float4_e2m1x2")
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := Parse(s); err == nil && d.Name() != s {
			t.Fatalf("Parse(%q) = %v", s, d)
		}
		if d, err := FromDescr(s); err == nil && !d.Valid() {
			t.Fatalf("FromDescr(%q) = invalid %v", s, d)
		}
	})
}
