package golden

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goldset/goldset/npy"
)

// vecCase is a paged-attention case for comparing the AVX-512 tiles with
// the scalar loops. The caches are given both as half bits (kh, vh, in the
// case's format) and as float32 values with full mantissas (kf, vf); slots
// no sequence reads hold NaN.
type vecCase struct {
	dims   AttentionDims
	q      []float32
	kh, vh []uint16
	kf, vf []float32
	bt, cl []int32
	scale  float64
}

// Value modes of a vecCase.
const (
	modeNormal = iota // N(0, 1)
	modeHuge          // magnitudes near the float16 maximum: huge scores
	modeInf           // as modeHuge with scale 1e300: scores of +-Inf, NaN in the softmax
	modeTiny          // subnormal halves, zeros and negative zeros among normal values
	modeNaNK          // one NaN (signalling in odd cases) in a K row that is read
	modeNaNV          // one NaN in a V row that is read
	modeInfK          // +-Inf in K rows that are read
	numModes
)

var modeNames = [numModes]string{"normal", "huge", "inf", "tiny", "nanK", "nanV", "infK"}

// halfBits returns the half pattern (format ht) nearest x.
func halfBits(x float64, ht HalfType) uint16 {
	if ht == BF16 {
		return npy.BF16FromF64(x)
	}
	return npy.F16FromF64(x)
}

func newVecCase(seed uint64, g, hkv, d, bs int, lens []int, ht HalfType, mode int) *vecCase {
	r := rand.New(rand.NewPCG(seed, 42))
	maxb, used := 1, 0
	for _, l := range lens {
		nb := (l + bs - 1) / bs
		maxb = max(maxb, nb)
		used += nb
	}
	nbPhys := used + 2
	hq := g * hkv
	c := &vecCase{
		dims:  AttentionDims{B: len(lens), Hq: hq, Hkv: hkv, D: d, NB: nbPhys, BS: bs, MAXB: maxb},
		scale: 1 / math.Sqrt(float64(d)),
	}
	if mode == modeInf {
		c.scale = 1e300
	}
	val := func() float64 {
		switch mode {
		case modeHuge, modeInf:
			x := 60000 + 5504*r.Float64()
			if r.IntN(2) == 0 {
				x = -x
			}
			return x
		case modeTiny:
			switch r.IntN(4) {
			case 0:
				return 0
			case 1:
				return math.Copysign(0, -1)
			case 2:
				return (r.Float64()*2 - 1) * 0x1p-15 // float16 subnormal range
			}
		}
		return r.NormFloat64()
	}
	c.q = make([]float32, len(lens)*hq*d)
	for i := range c.q {
		c.q[i] = float32(val())
	}
	n := nbPhys * bs * hkv * d
	c.kh, c.vh = make([]uint16, n), make([]uint16, n)
	c.kf, c.vf = make([]float32, n), make([]float32, n)
	for i := range n {
		c.kh[i], c.vh[i] = 0x7e00, 0xfe00 // NaN in every slot not read (both formats)
		c.kf[i], c.vf[i] = float32(math.NaN()), float32(math.NaN())
	}
	perm := r.Perm(nbPhys)
	c.bt = make([]int32, len(lens)*maxb)
	c.cl = make([]int32, len(lens))
	next := 0
	row := hkv * d
	var read []int // offsets of every element of the rows that are read
	for s, l := range lens {
		c.cl[s] = int32(l)
		for i := range maxb {
			if i >= (l+bs-1)/bs {
				c.bt[s*maxb+i] = -1
				continue
			}
			p := perm[next]
			next++
			c.bt[s*maxb+i] = int32(p)
			for j := 0; j < bs && i*bs+j < l; j++ {
				for e := range row {
					read = append(read, (p*bs+j)*row+e)
				}
			}
		}
	}
	for _, o := range read {
		k, v := val(), val()
		c.kh[o], c.vh[o] = halfBits(k, ht), halfBits(v, ht)
		c.kf[o], c.vf[o] = float32(k), float32(v)
		if mode == modeTiny && r.IntN(4) == 0 {
			// Raw subnormal patterns, with both signs.
			m := uint16(1 + r.IntN(0x3ff))
			if ht == BF16 {
				m &= 0x7f
				m |= 1
			}
			c.kh[o] = m | uint16(r.IntN(2))<<15
			c.kf[o] = math.Float32frombits(uint32(1+r.IntN(0x7fffff)) | uint32(r.IntN(2))<<31)
		}
	}
	pick := func() int { return read[r.IntN(len(read))] }
	switch mode {
	case modeNaNK, modeNaNV:
		h, f := c.kh, c.kf
		if mode == modeNaNV {
			h, f = c.vh, c.vf
		}
		o := pick()
		quiet := seed%2 == 0
		switch {
		case ht == BF16 && quiet:
			h[o] = 0x7fc5
		case ht == BF16:
			h[o] = 0xff85 // signalling
		case quiet:
			h[o] = 0x7e05
		default:
			h[o] = 0xfd05 // signalling
		}
		if quiet {
			f[o] = math.Float32frombits(0x7fc00005)
		} else {
			f[o] = math.Float32frombits(0xffa00005)
		}
	case modeInfK:
		for range 3 {
			o := pick()
			s := uint16(r.IntN(2)) << 15
			if ht == BF16 {
				c.kh[o] = 0x7f80 | s
			} else {
				c.kh[o] = 0x7c00 | s
			}
			c.kf[o] = float32(math.Inf(1 - 2*int(s>>15)))
		}
	}
	return c
}

// run calls the entry point (kind "paged", "sparse", or, with the float32
// caches only, the negative controls "wrongGQA" and "tailUnmasked"; ht 0
// for the float32 caches) with the vector tiles on or off.
func (c *vecCase) run(t *testing.T, kind string, ht HalfType, vec bool) (out, lse []float64) {
	t.Helper()
	hasAttnVec = vec
	dm := c.dims
	out, lse = make([]float64, dm.B*dm.Hq*dm.D), make([]float64, dm.B*dm.Hq)
	var err error
	switch kind {
	case "paged":
		if ht == 0 {
			err = PagedAttention(out, lse, c.q, c.kf, c.vf, c.bt, c.cl, dm, c.scale)
		} else {
			err = PagedAttentionHalf(out, lse, c.q, c.kh, c.vh, ht, c.bt, c.cl, dm, c.scale)
		}
	case "wrongGQA":
		err = PagedAttentionWrongGQA(out, lse, c.q, c.kf, c.vf, c.bt, c.cl, dm, c.scale)
	case "tailUnmasked":
		// The slots past L are read too: give them finite values, so that
		// the case keeps a single source of NaN.
		kf, vf := slices.Clone(c.kf), slices.Clone(c.vf)
		for i := range kf {
			if kf[i] != kf[i] && c.kh[i] == 0x7e00 {
				kf[i] = float32(i%7) - 3
			}
			if vf[i] != vf[i] && c.vh[i] == 0xfe00 {
				vf[i] = float32(i%5) - 2
			}
		}
		err = PagedAttentionTailUnmasked(out, lse, c.q, kf, vf, c.bt, c.cl, dm, c.scale)
	case "sparse":
		// Every other block of each selection row, and always the last.
		p := QuestParams{K: dm.MAXB, Granularity: QHead}
		sel := make([]int32, dm.B*dm.Hq*p.K)
		for b := range dm.B {
			nb := (int(c.cl[b]) + dm.BS - 1) / dm.BS
			for h := range dm.Hq {
				row := sel[(b*dm.Hq+h)*p.K : (b*dm.Hq+h+1)*p.K]
				n := 0
				for i := nb - 1; i >= 0; i-- {
					if i == nb-1 || (i+h)%2 == 0 {
						row[n] = int32(i)
						n++
					}
				}
				for ; n < len(row); n++ {
					row[n] = -1
				}
			}
		}
		if ht == 0 {
			err = SparseAttention(out, lse, c.q, c.kf, c.vf, c.bt, c.cl, sel, dm, p, c.scale)
		} else {
			err = SparseAttentionHalf(out, lse, c.q, c.kh, c.vh, ht, c.bt, c.cl, sel, dm, p, c.scale)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return out, lse
}

func firstDiff(a, b []float64) int {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestAttnVecMatchesScalar compares the AVX-512 attention tiles with the
// scalar loops bit for bit (every out and lse element), over group sizes
// that leave heads outside quads, head sizes the tiles take and one they
// leave to the scalar code, context lengths that leave token pairs and odd
// tokens, the three cache formats, and extreme values: huge products and
// infinite scores, subnormals and signed zeros, Inf and a NaN (quiet or
// signalling) in a row that is read; through PagedAttention(Half), the
// negative controls that share attend and SparseAttention(Half) (whose
// units hold one head, so they take the Go loops either way: the check
// guards that). Each case has at most one source of NaN payload: where two
// different NaNs meet, x86 keeps the first operand's, and which one that
// is depends on the Go compiler's register choice in the scalar loops.
func TestAttnVecMatchesScalar(t *testing.T) {
	if !hasAttnVec {
		t.Skip("no AVX-512: the scalar loops are the only path")
	}
	t.Cleanup(func() { hasAttnVec = true })
	seed := uint64(0)
	for _, bs := range []int{16, 40} {
		for _, g := range []int{1, 2, 3, 4, 5, 8} {
			for _, d := range []int{8, 64, 128, 136, 12} {
				for _, lens := range [][]int{{1, 3}, {bs - 1, bs}, {bs + 1, 3*bs + 5}} {
					for _, ht := range []HalfType{0, F16, BF16} {
						seed++
						mode := int(seed % numModes)
						c := newVecCase(seed, g, 2, d, bs, lens, ht, mode)
						kinds := []string{"paged", "sparse"}
						if ht == 0 {
							kinds = append(kinds, "wrongGQA", "tailUnmasked")
						}
						for _, kind := range kinds {
							name := fmt.Sprintf("%s bs=%d G=%d D=%d lens=%v ht=%d %s", kind, bs, g, d, lens, ht, modeNames[mode])
							wo, wl := c.run(t, kind, ht, false)
							go1, gl := c.run(t, kind, ht, true)
							if i := firstDiff(go1, wo); i >= 0 {
								t.Fatalf("%s: out[%d]: vector %v (%#x), scalar %v (%#x)", name, i, go1[i], math.Float64bits(go1[i]), wo[i], math.Float64bits(wo[i]))
							}
							if i := firstDiff(gl, wl); i >= 0 {
								t.Fatalf("%s: lse[%d]: vector %v (%#x), scalar %v (%#x)", name, i, gl[i], math.Float64bits(gl[i]), wl[i], math.Float64bits(wl[i]))
							}
						}
					}
				}
			}
		}
	}
}
