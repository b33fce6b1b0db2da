// Package jsonnum is goldset's one JSON form of a float64 that may be NaN
// or infinite, used by every --json report (compare.Float, diff.Number).
//
// JSON numbers cannot hold NaN or infinities (encoding/json refuses to
// write them), so a finite value is a plain number and a non-finite one
// is one of the strings "NaN", "+Inf" and "-Inf". Strings rather than
// null because they keep which value it was and every consumer converts
// them in one step: Python's float("NaN") / float("+Inf") / float("-Inf"),
// jq's tonumber (NaN comes back as null, ±Inf as ±1.797e308, jq's own
// forms), JavaScript's parseFloat for NaN (±Inf: "+Inf" and "-Inf" are
// not its "Infinity"). A null would compare below every number in jq
// and fail Python's float() without saying which value it stood for.
package jsonnum

import (
	"fmt"
	"math"
	"strconv"
)

// Float is a float64 whose JSON form survives non-finite values.
type Float float64

// MarshalJSON writes a number, or "NaN", "+Inf", "-Inf".
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	switch {
	case math.IsNaN(x):
		return []byte(`"NaN"`), nil
	case math.IsInf(x, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(x, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

// UnmarshalJSON reads what MarshalJSON writes, and "Inf" for +Inf.
func (f *Float) UnmarshalJSON(b []byte) error {
	switch s := string(b); s {
	case `"NaN"`:
		*f = Float(math.NaN())
	case `"+Inf"`, `"Inf"`:
		*f = Float(math.Inf(1))
	case `"-Inf"`:
		*f = Float(math.Inf(-1))
	default:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("jsonnum: %q is not a number, \"NaN\", \"+Inf\" or \"-Inf\"", s)
		}
		*f = Float(x)
	}
	return nil
}
