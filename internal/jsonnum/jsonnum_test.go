package jsonnum

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestFloatJSON(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		x    float64
		json string
	}{
		{0, `0`}, {1.5, `1.5`}, {-2e-300, `-2e-300`}, {math.MaxFloat64, `1.7976931348623157e+308`},
		{nan, `"NaN"`}, {inf, `"+Inf"`}, {-inf, `"-Inf"`},
	} {
		b, err := json.Marshal(struct{ V Float }{Float(tc.x)})
		if err != nil {
			t.Fatalf("%v: %v", tc.x, err)
		}
		if want := `{"V":` + tc.json + `}`; string(b) != want {
			t.Errorf("%v: %s, want %s", tc.x, b, want)
		}
		var back struct{ V Float }
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if y := float64(back.V); !(y == tc.x || math.IsNaN(tc.x) && math.IsNaN(y)) {
			t.Errorf("%v -> %s -> %v", tc.x, b, y)
		}
	}
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{`"Inf"`, inf, false}, {`-0`, math.Copysign(0, -1), false}, {`1e400`, 0, true},
		{`"x"`, 0, true}, {`null`, 0, true}, {`"nan"`, 0, true}, {`"1.5"`, 0, true},
	} {
		var f Float
		err := json.Unmarshal([]byte(tc.in), &f)
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "not a number") {
			t.Errorf("%s: %v does not say what is accepted", tc.in, err)
		}
		if err == nil && (float64(f) != tc.want || math.Signbit(float64(f)) != math.Signbit(tc.want)) {
			t.Errorf("%s: %v, want %v", tc.in, f, tc.want)
		}
	}
}
