package golden_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goldset/goldset/golden"
)

func TestNegativesBroken(t *testing.T) {
	c := newAttnCase(60, 3, 8, 2, 32, 16, []int{37, 90, 16})
	gold, _, err := c.paged()
	if err != nil {
		t.Fatal(err)
	}
	out, lse := make([]float64, len(gold)), make([]float64, c.dims.B*c.dims.Hq)
	if err := golden.PagedAttentionWrongGQA(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, c.dims, c.scale); err != nil {
		t.Fatal(err)
	}
	if e := maxRelDiff(out, gold); !(e > 0.1) {
		t.Errorf("wrong GQA: rel diff %g, want large", e)
	}
	if err := golden.PagedAttentionTailUnmasked(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, c.dims, c.scale); err != nil {
		t.Fatal(err)
	}
	if !hasNaN(out) { // tails hold NaN in these cases
		t.Error("tail unmasked: NaN tail did not show")
	}

	p := golden.QuestParams{K: 3, AnchorFirst: true, AnchorLast: true}
	_, sel := questCase(t, c, p)
	sparse := make([]float64, len(gold))
	if err := golden.SparseAttention(sparse, lse, c.q, c.kc, c.vc, c.bt, c.cl, sel, c.dims, p, c.scale); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(out, lse []float64, q, kc, vc []float32, bt, cl, sel []int32, d golden.AttentionDims, p golden.QuestParams, s float64) error{
		"sparse wrong GQA": golden.SparseAttentionWrongGQA,
		"sparse skip":      golden.SparseAttentionSkipBlock,
	} {
		if err := f(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, sel, c.dims, p, c.scale); err != nil {
			t.Fatal(err)
		}
		if e := maxRelDiff(out, sparse); !(e > 0.1) {
			t.Errorf("%s: rel diff %g, want large", name, e)
		}
	}
	if err := golden.SparseAttentionTailUnmasked(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, sel, c.dims, p, c.scale); err != nil {
		t.Fatal(err)
	}
	if !hasNaN(out) {
		t.Error("sparse tail unmasked: NaN tail did not show")
	}

	x := []float32{1e4, -1e4, 3, 2}
	y := make([]float64, 4)
	golden.SoftmaxNoMaxF32(y, nil, nil, x, 1, 4)
	if !hasNaN(y) {
		t.Errorf("softmax without max on a 1e4 row: %v, want NaN", y)
	}
}

// The float32 references are honest: close to the float64 goldens.
func TestNegativesF32Close(t *testing.T) {
	c := newAttnCase(61, 3, 8, 2, 128, 16, []int{37, 900, 16})
	gold, glse, _ := c.paged()
	out, lse := make([]float64, len(gold)), make([]float64, len(glse))
	if err := golden.PagedAttentionF32(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, c.dims, c.scale); err != nil {
		t.Fatal(err)
	}
	if e, f := maxRelDiff(out, gold), maxRelDiff(lse, glse); e > 1e-5 || f > 1e-5 || e == 0 {
		t.Errorf("PagedAttentionF32: rel diff %g, lse %g", e, f)
	}
	p := golden.QuestParams{K: 3, AnchorFirst: true, AnchorLast: true, Granularity: golden.KVGroupSum}
	_, sel := questCase(t, c, p)
	sp, sl := make([]float64, len(gold)), make([]float64, len(glse))
	golden.SparseAttention(sp, sl, c.q, c.kc, c.vc, c.bt, c.cl, sel, c.dims, p, c.scale)
	if err := golden.SparseAttentionF32(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, sel, c.dims, p, c.scale); err != nil {
		t.Fatal(err)
	}
	if e := maxRelDiff(out, sp); e > 1e-5 || e == 0 {
		t.Errorf("SparseAttentionF32: rel diff %g", e)
	}

	r := rand.New(rand.NewPCG(62, 0))
	m, k, n := 4, 4096, 64
	a, b := randF32(r, m*k, 1), randF32(r, k*n, 1/math.Sqrt(float64(k)))
	g, f := make([]float64, m*n), make([]float64, m*n)
	golden.Matmul(g, a, b, m, k, n, false)
	golden.MatmulF32(f, a, b, m, k, n, false)
	if e := maxRelDiff(f, g); e > 1e-5 || e == 0 {
		t.Errorf("MatmulF32: rel diff %g", e)
	}
	x := randF32(r, 2*4096, 1e3)
	sm, smf := make([]float64, len(x)), make([]float64, len(x))
	golden.Softmax(sm, nil, nil, x, 2, 4096)
	golden.SoftmaxF32(smf, nil, nil, x, 2, 4096)
	for i := range sm {
		if math.Abs(sm[i]-smf[i]) > 1e-5*math.Abs(sm[i])+1e-30 {
			t.Fatalf("SoftmaxF32[%d] = %g, golden %g", i, smf[i], sm[i])
		}
	}
}
