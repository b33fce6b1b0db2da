package golden_test

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/goldset/goldset/golden"
)

var update = flag.Bool("update", false, "regenerate testdata/fixtures.json with /usr/bin/python3 and numpy")

// hexFloats is a list of float.hex strings (exact, inf allowed).
type hexFloats []float64

func (h *hexFloats) UnmarshalJSON(b []byte) error {
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return err
	}
	*h = make([]float64, len(ss))
	for i, s := range ss {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		(*h)[i] = v
	}
	return nil
}

func (h hexFloats) f32() []float32 {
	x := make([]float32, len(h))
	for i, v := range h {
		x[i] = float32(v)
		if float64(x[i]) != v && v == v {
			panic("fixture input not exact in float32")
		}
	}
	return x
}

type fixture struct {
	Op                                 string
	M, K, N                            int
	BNK                                bool
	A, B, C, X, Y, RowMax, RowSum      hexFloats
	Batch, Hq, Hkv, D, NB, BS, MAXB    int
	Scale                              string
	Q, KCache, VCache, Out, LSE        hexFloats
	KMax, KMin, Scores                 hexFloats
	BlockTables, ContextLens, Selected []int32
	Granularity                        string
}

// within1ulp32 reports whether got is within one float32 ulp (at want's
// magnitude) of want, and returns the float64 difference.
func within1ulp32(got, want float64) (bool, float64) {
	if math.IsInf(want, 0) || want != want {
		return got == want || (got != got && want != want), 0
	}
	w := math.Abs(float64(float32(want)))
	ulp := float64(math.Nextafter32(float32(w), float32(math.Inf(1)))) - w
	if w == 0 {
		ulp = math.SmallestNonzeroFloat32
	}
	d := math.Abs(got - want)
	return d <= ulp, d
}

func TestFixturesNumpy(t *testing.T) {
	if *update {
		if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
			t.Fatal("-update needs /usr/bin/python3 with numpy (apt-get install -y python3-numpy)")
		}
		cmd := exec.Command("/usr/bin/python3", "testdata/make_fixtures.py")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make_fixtures.py: %v\n%s", err, out)
		}
	}
	raw, err := os.ReadFile("testdata/fixtures.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Numpy string
		Cases []json.RawMessage
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	var maxDiff float64
	check := func(name string, got []float64, want hexFloats) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, fixture has %d", name, len(got), len(want))
		}
		for i := range got {
			ok, d := within1ulp32(got[i], want[i])
			if !ok {
				t.Errorf("%s[%d] = %v, numpy %v", name, i, got[i], want[i])
				return
			}
			maxDiff = math.Max(maxDiff, d)
		}
	}
	var att fixture
	var dims golden.AttentionDims
	for _, rc := range file.Cases {
		var f fixture
		if err := json.Unmarshal(rc, &f); err != nil {
			t.Fatal(err)
		}
		switch f.Op {
		case "matmul":
			c := make([]float64, f.M*f.N)
			golden.Matmul(c, f.A.f32(), f.B.f32(), f.M, f.K, f.N, f.BNK)
			check("matmul", c, f.C)
		case "softmax":
			y := make([]float64, f.M*f.N)
			mx, sm := make([]float64, f.M), make([]float64, f.M)
			golden.Softmax(y, mx, sm, f.X.f32(), f.M, f.N)
			check("softmax y", y, f.Y)
			check("softmax rowMax", mx, f.RowMax)
			check("softmax rowSum", sm, f.RowSum)
		case "paged_attention":
			att = f
			dims = golden.AttentionDims{B: f.Batch, Hq: f.Hq, Hkv: f.Hkv, D: f.D, NB: f.NB, BS: f.BS, MAXB: f.MAXB}
			scale, _ := strconv.ParseFloat(f.Scale, 64)
			out, lse := make([]float64, len(f.Out)), make([]float64, len(f.LSE))
			if err := golden.PagedAttention(out, lse, f.Q.f32(), f.KCache.f32(), f.VCache.f32(), f.BlockTables, f.ContextLens, dims, scale); err != nil {
				t.Fatal(err)
			}
			check("paged out", out, f.Out)
			check("paged lse", lse, f.LSE)
		case "quest":
			q, kc, vc := att.Q.f32(), att.KCache.f32(), att.VCache.f32()
			gran := golden.QHead
			if f.Granularity == "kv_group_sum" {
				gran = golden.KVGroupSum
			}
			kmax, kmin := make([]float64, len(f.KMax)), make([]float64, len(f.KMin))
			if err := golden.BlockMetadata(kmax, kmin, kc, att.BlockTables, att.ContextLens, dims); err != nil {
				t.Fatal(err)
			}
			check("kmax", kmax, f.KMax)
			check("kmin", kmin, f.KMin)
			scores := make([]float64, len(f.Scores))
			if err := golden.BlockScores(scores, q, kmax, kmin, att.ContextLens, dims, gran); err != nil {
				t.Fatal(err)
			}
			check("scores "+f.Granularity, scores, f.Scores)
			p := golden.QuestParams{K: f.K, AnchorFirst: true, AnchorLast: true, Granularity: gran}
			sel := make([]int32, len(f.Selected))
			if _, _, err := golden.SelectBlocks(sel, scores, att.ContextLens, dims, p); err != nil {
				t.Fatal(err)
			}
			for i := range sel {
				if sel[i] != f.Selected[i] {
					t.Fatalf("selected %v, numpy %v", sel, f.Selected)
				}
			}
			scale, _ := strconv.ParseFloat(att.Scale, 64)
			out, lse := make([]float64, len(f.Out)), make([]float64, len(f.LSE))
			if err := golden.SparseAttention(out, lse, q, kc, vc, att.BlockTables, att.ContextLens, sel, dims, p, scale); err != nil {
				t.Fatal(err)
			}
			check("sparse out "+f.Granularity, out, f.Out)
			check("sparse lse "+f.Granularity, lse, f.LSE)
		default:
			t.Fatalf("unknown fixture op %q", f.Op)
		}
	}
	t.Logf("numpy %s fixtures: max |golden - numpy| = %g (float64)", file.Numpy, maxDiff)
}
