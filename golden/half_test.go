package golden_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/npy"
)

// halfCase rounds an attnCase's caches to float16 or bfloat16 and returns
// the bits and the exactly widened float32 caches.
func halfCase(c *attnCase, ht golden.HalfType) (kb, vb []uint16, kf, vf []float32) {
	conv := func(src []float32) ([]uint16, []float32) {
		bits := make([]uint16, len(src))
		wide := make([]float32, len(src))
		for i, x := range src {
			if ht == golden.F16 {
				bits[i] = npy.F16FromF64(float64(x))
				wide[i] = npy.F16ToF32(bits[i])
			} else {
				bits[i] = npy.BF16FromF64(float64(x))
				wide[i] = npy.BF16ToF32(bits[i])
			}
		}
		return bits, wide
	}
	kb, kf = conv(c.kc)
	vb, vf = conv(c.vc)
	return
}

// TestHalfKernelsMatchFloat32 checks that the half-bits entry points give
// the same bits as the float32 kernels on the widened caches, for both
// formats, head counts that need odd row pairings, a head size that is not
// a multiple of 16 (the vector widening's tail), and NaN in unread slots.
func TestHalfKernelsMatchFloat32(t *testing.T) {
	for _, ht := range []golden.HalfType{golden.F16, golden.BF16} {
		for i, shape := range []struct{ hq, hkv, d, bs int }{{8, 2, 32, 16}, {5, 1, 20, 8}, {12, 4, 128, 16}} {
			c := newAttnCase(uint64(70+i), 3, shape.hq, shape.hkv, shape.d, shape.bs, []int{1, 37, 3*shape.bs + 5})
			kb, vb, kf, vf := halfCase(c, ht)
			dm := c.dims
			wo, wl := make([]float64, len(c.q)), make([]float64, dm.B*dm.Hq)
			if err := golden.PagedAttention(wo, wl, c.q, kf, vf, c.bt, c.cl, dm, c.scale); err != nil {
				t.Fatal(err)
			}
			go1, gl := make([]float64, len(c.q)), make([]float64, dm.B*dm.Hq)
			if err := golden.PagedAttentionHalf(go1, gl, c.q, kb, vb, ht, c.bt, c.cl, dm, c.scale); err != nil {
				t.Fatal(err)
			}
			if !bitsEqual(go1, wo) || !bitsEqual(gl, wl) {
				t.Fatalf("ht %d shape %v: PagedAttentionHalf differs from PagedAttention", ht, shape)
			}

			kmax, kmin := make([]float64, dm.B*dm.MAXB*dm.Hkv*dm.D), make([]float64, dm.B*dm.MAXB*dm.Hkv*dm.D)
			hmax, hmin := make([]float64, len(kmax)), make([]float64, len(kmax))
			if err := golden.BlockMetadata(kmax, kmin, kf, c.bt, c.cl, dm); err != nil {
				t.Fatal(err)
			}
			if err := golden.BlockMetadataHalf(hmax, hmin, kb, ht, c.bt, c.cl, dm); err != nil {
				t.Fatal(err)
			}
			if !bitsEqual(hmax, kmax) || !bitsEqual(hmin, kmin) {
				t.Fatalf("ht %d shape %v: BlockMetadataHalf differs from BlockMetadata", ht, shape)
			}

			p := golden.QuestParams{K: 2, AnchorLast: true, Granularity: golden.KVGroupSum}
			sel := make([]int32, dm.B*p.Granularity.Hsel(dm)*p.K)
			scores := make([]float64, dm.B*p.Granularity.Hsel(dm)*dm.MAXB)
			if err := golden.BlockScores(scores, c.q, kmax, kmin, c.cl, dm, p.Granularity); err != nil {
				t.Fatal(err)
			}
			if _, _, err := golden.SelectBlocks(sel, scores, c.cl, dm, p); err != nil {
				t.Fatal(err)
			}
			if err := golden.SparseAttention(wo, wl, c.q, kf, vf, c.bt, c.cl, sel, dm, p, c.scale); err != nil {
				t.Fatal(err)
			}
			if err := golden.SparseAttentionHalf(go1, gl, c.q, kb, vb, ht, c.bt, c.cl, sel, dm, p, c.scale); err != nil {
				t.Fatal(err)
			}
			if !bitsEqual(go1, wo) || !bitsEqual(gl, wl) {
				t.Fatalf("ht %d shape %v: SparseAttentionHalf differs from SparseAttention", ht, shape)
			}
		}
	}
}

// TestBlockMetadataHalfSpecials covers what the integer ordering must get
// right: +0 above -0, subnormals, infinities, and NaN of either sign
// (with any payload) among valid tokens, which must propagate exactly as
// math.Max/math.Min do in the float32 kernel.
func TestBlockMetadataHalfSpecials(t *testing.T) {
	specials := map[golden.HalfType][]uint16{
		golden.F16:  {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0xfd55, 0x3c00, 0xbc00},
		golden.BF16: {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x807f, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xffa5, 0x3f80, 0xbf80},
	}
	for ht, sp := range specials {
		r := rand.New(rand.NewPCG(uint64(ht), 5))
		dm := golden.AttentionDims{B: 2, Hq: 2, Hkv: 1, D: 64, NB: 4, BS: 4, MAXB: 2}
		n := dm.NB * dm.BS * dm.Hkv * dm.D
		kb := make([]uint16, n)
		kf := make([]float32, n)
		for trial := range 200 {
			for i := range kb {
				// Mostly specials, so every pair of them meets in some element.
				if r.IntN(4) > 0 {
					kb[i] = sp[r.IntN(len(sp))]
				} else {
					kb[i] = uint16(r.Uint32())
				}
				if ht == golden.F16 {
					kf[i] = npy.F16ToF32(kb[i])
				} else {
					kf[i] = npy.BF16ToF32(kb[i])
				}
			}
			bt := []int32{0, 1, 2, 3}
			cl := []int32{int32(1 + trial%8), 8}
			wmax, wmin := make([]float64, dm.B*dm.MAXB*dm.D), make([]float64, dm.B*dm.MAXB*dm.D)
			hmax, hmin := make([]float64, len(wmax)), make([]float64, len(wmax))
			if err := golden.BlockMetadata(wmax, wmin, kf, bt, cl, dm); err != nil {
				t.Fatal(err)
			}
			if err := golden.BlockMetadataHalf(hmax, hmin, kb, ht, bt, cl, dm); err != nil {
				t.Fatal(err)
			}
			for i := range wmax {
				if math.Float64bits(hmax[i]) != math.Float64bits(wmax[i]) || math.Float64bits(hmin[i]) != math.Float64bits(wmin[i]) {
					t.Fatalf("ht %d trial %d elem %d: half max/min %v/%v, float32 kernel %v/%v", ht, trial, i, hmax[i], hmin[i], wmax[i], wmin[i])
				}
			}
		}
	}
}
