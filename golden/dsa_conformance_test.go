package golden_test

import (
	"testing"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/golden/goldentest"
)

func TestDSAConformance(t *testing.T) {
	t.Run("IndexCache", func(t *testing.T) { goldentest.TestDSAIndexCache(t, golden.DSAIndexCache) })
	t.Run("Indexer", func(t *testing.T) { goldentest.TestDSAIndexer(t, golden.DSAIndexer) })
	t.Run("IndexerRagged", func(t *testing.T) { goldentest.TestDSAIndexerRagged(t, golden.DSAIndexerRagged) })
	t.Run("SparseAttention", func(t *testing.T) { goldentest.TestDSASparseAttention(t, golden.DSASparseAttention) })
	t.Run("BlockHeader", func(t *testing.T) { goldentest.TestDSABlockHeader(t, golden.DSABlockHeader) })
}

// The DSA suites reject every broken kernel of dsa_negatives.go.
func TestDSAConformanceRejects(t *testing.T) {
	for name, suite := range map[string]func(testing.TB){
		"indexer ignore causal": func(tb testing.TB) { goldentest.TestDSAIndexer(tb, golden.DSAIndexerIgnoreCausal) },
		"indexer relu after w":  func(tb testing.TB) { goldentest.TestDSAIndexer(tb, golden.DSAIndexerReLUAfterWeight) },
		"indexer no k scale":    func(tb testing.TB) { goldentest.TestDSAIndexer(tb, golden.DSAIndexerNoKScale) },
		"attention -1 as 0":     func(tb testing.TB) { goldentest.TestDSASparseAttention(tb, golden.DSASparseAttentionMinusOneAsSlot0) },
		"attention lse base 2":  func(tb testing.TB) { goldentest.TestDSASparseAttention(tb, golden.DSASparseAttentionLSEBase2) },
		"attention scale 576":   func(tb testing.TB) { goldentest.TestDSASparseAttention(tb, golden.DSASparseAttentionScale576) },
		"cache fp32 for ue8m0": func(tb testing.TB) {
			goldentest.TestDSAIndexCache(tb, func(dst []byte, k []float32, s []int32, c []byte, d golden.DSACacheDims, _ golden.DSAScaleFmt) error {
				return golden.DSAIndexCache(dst, k, s, c, d, golden.DSAScaleFP32)
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
