package golden_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/golden/goldentest"
)

func TestConformance(t *testing.T) {
	t.Run("Matmul", func(t *testing.T) { goldentest.TestMatmul(t, golden.Matmul) })
	t.Run("Softmax", func(t *testing.T) { goldentest.TestSoftmax(t, golden.Softmax) })
	t.Run("ReshapeAndCache", func(t *testing.T) { goldentest.TestReshapeAndCache(t, golden.ReshapeAndCache[float32]) })
	t.Run("PagedAttention", func(t *testing.T) { goldentest.TestPagedAttention(t, golden.PagedAttention) })
	t.Run("UnifiedAttention", func(t *testing.T) { goldentest.TestUnifiedAttention(t, golden.UnifiedAttention) })
	t.Run("SelectBlocks", func(t *testing.T) { goldentest.TestSelectBlocks(t, golden.SelectBlocks) })
	t.Run("SparseAttention", func(t *testing.T) { goldentest.TestSparseAttention(t, golden.SparseAttention) })
}

// recorder is a testing.TB that records failures instead of reporting them.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed bool
	first  string
}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failed {
		r.first = msg
	}
	r.failed = true
}
func (r *recorder) Errorf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)) }
func (r *recorder) Error(a ...any)            { r.fail(fmt.Sprint(a...)) }
func (r *recorder) Fail()                     { r.fail("Fail") }
func (r *recorder) Fatalf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)); runtime.Goexit() }
func (r *recorder) Fatal(a ...any)            { r.fail(fmt.Sprint(a...)); runtime.Goexit() }
func (r *recorder) FailNow()                  { r.fail("FailNow"); runtime.Goexit() }
func (r *recorder) Failed() bool              { return r.failed }
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Log(...any)                {}
func (r *recorder) Helper()                   {}

// suiteFails runs suite against a recorder and returns the first failure.
func suiteFails(t *testing.T, suite func(testing.TB)) (bool, string) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		suite(r)
	}()
	<-done
	return r.failed, r.first
}

// The suite rejects broken kernels and the float32 references (it is a
// float64-exact suite).
func TestConformanceRejects(t *testing.T) {
	for name, suite := range map[string]func(testing.TB){
		"paged wrong GQA":     func(tb testing.TB) { goldentest.TestPagedAttention(tb, golden.PagedAttentionWrongGQA) },
		"paged tail unmasked": func(tb testing.TB) { goldentest.TestPagedAttention(tb, golden.PagedAttentionTailUnmasked) },
		"paged float32":       func(tb testing.TB) { goldentest.TestPagedAttention(tb, golden.PagedAttentionF32) },
		"sparse wrong GQA":    func(tb testing.TB) { goldentest.TestSparseAttention(tb, golden.SparseAttentionWrongGQA) },
		"sparse skip block":   func(tb testing.TB) { goldentest.TestSparseAttention(tb, golden.SparseAttentionSkipBlock) },
		"sparse tail":         func(tb testing.TB) { goldentest.TestSparseAttention(tb, golden.SparseAttentionTailUnmasked) },
		"matmul float32":      func(tb testing.TB) { goldentest.TestMatmul(tb, golden.MatmulF32) },
		"unified float32":     func(tb testing.TB) { goldentest.TestUnifiedAttention(tb, golden.UnifiedAttentionF32) },
		"unified causal +1":   unifiedNegative(golden.CausalOffByOne),
		"unified prefix":      unifiedNegative(golden.PrefixIgnored),
		"unified wrong start": unifiedNegative(golden.WrongStart),
		"unified wrong GQA":   unifiedNegative(golden.WrongGQA),
		"unified pad tokens":  unifiedNegative(golden.PadAsTokens),
		"softmax float32":     func(tb testing.TB) { goldentest.TestSoftmax(tb, golden.SoftmaxF32) },
		"softmax no max":      func(tb testing.TB) { goldentest.TestSoftmax(tb, golden.SoftmaxNoMaxF32) },
		"matmul writes pad": func(tb testing.TB) {
			goldentest.TestMatmul(tb, func(dst []float64, a, b []float32, m, k, n int, bNK bool) {
				golden.Matmul(dst, a, b, m, k, n, bNK)
				if cap(dst) > len(dst) {
					dst[:len(dst)+1][len(dst)] = 0
				} else if len(dst) > 0 {
					dst[0] = dst[0] * (1 + 1e-9) // the suite clips cap: break a value instead
				}
			})
		},
		"reshape modifies input": func(tb testing.TB) {
			goldentest.TestReshapeAndCache(tb, func(dk, dv, k, v, kc, vc []float32, s []int32, d golden.CacheDims) error {
				return golden.ReshapeAndCache(kc, vc, k, v, kc, vc, s, d) // in place on the inputs
			})
		},
	} {
		failed, first := suiteFails(t, suite)
		t.Logf("%s: %s", name, first)
		if !failed {
			t.Errorf("%s: conformance suite passed a broken kernel", name)
		}
	}
}

// unifiedNegative runs the unified-attention suite on a wrong variant.
func unifiedNegative(bug golden.UnifiedBug) func(testing.TB) {
	return func(tb testing.TB) {
		goldentest.TestUnifiedAttention(tb, func(out, lse []float64, q, k, v []float32, bt, sl, qsl []int32, d golden.UnifiedDims, scale float64) error {
			return golden.UnifiedAttentionNegative(out, lse, q, k, v, bt, sl, qsl, d, scale, bug)
		})
	}
}
