package gen

import (
	"bytes"
	"encoding/json"
	"github.com/goldset/goldset/internal/testenv"
	"math"
	"os/exec"
	"reflect"
	"strconv"
	"testing"
)

// python3WithNumpy returns the interpreter to use, or skips (fails when
// GOLDSET_REQUIRE_TOOLS=1).
func python3WithNumpy(t *testing.T) string {
	t.Helper()
	return testenv.PythonNumpy(t)
}

type refReq struct {
	Seed   uint64  `json:"seed"`
	Case   string  `json:"case"`
	Tensor string  `json:"tensor"`
	Kind   string  `json:"kind"`
	DType  string  `json:"dtype,omitempty"`
	At     int64   `json:"at"`
	N      int     `json:"n"`
	K      int     `json:"k"`
	Scale  float64 `json:"scale"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// goRef computes what gen_ref.py should return for r, as JSON-compatible values.
func goRef(r refReq) any {
	s := NewStream(r.Seed, r.Case, r.Tensor)
	dt := map[string]DType{"float16": F16, "bfloat16": BF16, "float32": F32, "float64": F64}[r.DType]
	bitsOf := func(fill func(u16 []uint16, f32 []float32, f64 []float64)) []uint64 {
		out := make([]uint64, r.N)
		switch dt {
		case F16, BF16:
			b := make([]uint16, r.N)
			fill(b, nil, nil)
			for i, v := range b {
				out[i] = uint64(v)
			}
		case F32:
			b := make([]float32, r.N)
			fill(nil, b, nil)
			for i, v := range b {
				out[i] = uint64(math.Float32bits(v))
			}
		default:
			b := make([]float64, r.N)
			fill(nil, nil, b)
			for i, v := range b {
				out[i] = math.Float64bits(v)
			}
		}
		return out
	}
	switch r.Kind {
	case "key":
		k := s.Key()
		return []string{strconv.FormatUint(k[0], 10), strconv.FormatUint(k[1], 10), strconv.FormatUint(k[2], 10), strconv.FormatUint(k[3], 10)}
	case "zig":
		w, f := make([]uint64, zigN), make([]uint64, zigN)
		for i := range zigN {
			w[i], f[i] = math.Float64bits(zigW[i]), math.Float64bits(zigF[i])
		}
		return map[string]any{"k": zigK[:], "w": w, "f": f}
	case "normal":
		return bitsOf(func(u16 []uint16, f32 []float32, f64 []float64) {
			switch dt {
			case F16, BF16:
				Normal(s, u16, r.At, dt, r.Scale)
			case F32:
				Normal(s, f32, r.At, dt, r.Scale)
			default:
				Normal(s, f64, r.At, dt, r.Scale)
			}
		})
	case "uniform":
		return bitsOf(func(u16 []uint16, f32 []float32, f64 []float64) {
			switch dt {
			case F16, BF16:
				Uniform(s, u16, r.At, dt, r.Lo, r.Hi)
			case F32:
				Uniform(s, f32, r.At, dt, r.Lo, r.Hi)
			default:
				Uniform(s, f64, r.At, dt, r.Lo, r.Hi)
			}
		})
	case "ints":
		v := make([]int32, r.N)
		Ints(s, v, r.At, int64(r.Lo), int64(r.Hi))
		return v
	case "rand":
		g := s.Rand()
		out := make([]string, r.N)
		for i := range out {
			out[i] = strconv.FormatUint(g.Uint64(), 10)
		}
		return out
	case "perm":
		return s.Rand().Perm(r.N)
	case "choice":
		return s.Rand().Choice(r.N, r.K)
	}
	panic("unknown kind")
}

// runGenRef sends reqs to testdata/gen_ref.py as JSON and decodes its
// answer into results.
func runGenRef(t testing.TB, py string, reqs, results any) {
	t.Helper()
	in, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "testdata/gen_ref.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gen_ref.py: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(out, results); err != nil {
		t.Fatal(err)
	}
}

// RunGenRef is runGenRef for the external test package.
var RunGenRef = runGenRef

// TestPythonReference checks doc.go by an independent Python
// reimplementation (testdata/gen_ref.py): every request must agree bit for bit.
func TestPythonReference(t *testing.T) {
	py := python3WithNumpy(t)
	reqs := []refReq{
		{Seed: 0, Kind: "key"},
		{Seed: 42, Case: "case/a", Tensor: "key_cache", Kind: "key"},
		{Kind: "zig"},
		{Seed: 7, Case: "c", Tensor: "x", Kind: "normal", DType: "float64", At: 0, N: 40000, Scale: 1},
		{Seed: 7, Case: "c", Tensor: "x", Kind: "normal", DType: "float16", At: 300, N: 1000, Scale: 0.1},
		{Seed: 7, Case: "c", Tensor: "x", Kind: "normal", DType: "float16", At: 5, N: 600, Scale: 1e-6}, // fp16 subnormals
		{Seed: 7, Case: "c", Tensor: "x", Kind: "normal", DType: "float16", At: 0, N: 300, Scale: 3e4},  // overflow to inf
		{Seed: 8, Case: "c", Tensor: "y", Kind: "normal", DType: "bfloat16", At: 513, N: 1000, Scale: 2},
		{Seed: 8, Case: "c", Tensor: "y", Kind: "normal", DType: "float32", At: 1, N: 700, Scale: 1.0 / 3},
		{Seed: 9, Case: "u", Tensor: "y", Kind: "uniform", DType: "float16", At: 17, N: 600, Lo: -6e4, Hi: 6e4},
		{Seed: 9, Case: "u", Tensor: "y", Kind: "uniform", DType: "bfloat16", At: 0, N: 300, Lo: -1e38, Hi: 1e38},
		{Seed: 9, Case: "u", Tensor: "y", Kind: "uniform", DType: "float32", At: 250, N: 300, Lo: 0, Hi: 1},
		{Seed: 9, Case: "u", Tensor: "y", Kind: "uniform", DType: "float64", At: 0, N: 300, Lo: -2, Hi: 3},
		{Seed: 10, Case: "i", Tensor: "z", Kind: "ints", At: 100, N: 700, Lo: -5, Hi: 1000},
		{Seed: 10, Case: "i", Tensor: "z", Kind: "ints", At: 0, N: 300, Lo: math.MinInt32, Hi: math.MaxInt32 + 1},
		{Seed: 10, Case: "i", Tensor: "z", Kind: "ints", At: 0, N: 300, Lo: 0, Hi: 3<<29 + 1}, // high rejection rate
		{Seed: 11, Case: "r", Tensor: "w", Kind: "rand", N: 20},
		{Seed: 11, Case: "r", Tensor: "w", Kind: "perm", N: 1000},
		{Seed: 11, Case: "r", Tensor: "w", Kind: "choice", N: 200000, K: 50}, // sparse path in Go
	}
	var got []any
	runGenRef(t, py, reqs, &got)
	if len(got) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(got), len(reqs))
	}
	for i, r := range reqs {
		var want any
		b, _ := json.Marshal(goRef(r))
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("request %d %+v: Python reference differs from Go", i, r)
		}
	}
	// The F64 request must have exercised the tail path (|z| > R) for the
	// comparison to cover it.
	z := make([]float64, 40000)
	Normal(NewStream(7, "c", "x"), z, 0, F64, 1)
	tails := 0
	for _, v := range z {
		if math.Abs(v) > zigR {
			tails++
		}
	}
	if tails == 0 {
		t.Error("reference request hit no tail samples")
	}
}
