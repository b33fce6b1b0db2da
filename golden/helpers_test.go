package golden_test

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/npy"
)

// attnCase is a random paged-attention case. Slots that are not valid
// tokens, and physical blocks no sequence uses, hold NaN; block-table
// entries past ceil(L/BS) are -1 or NB+7, so reading any of them shows.
type attnCase struct {
	dims      golden.AttentionDims
	q, kc, vc []float32
	bt, cl    []int32
	scale     float64
}

// bf16 rounds to bfloat16 values so the inputs look like a real cache.
func bf16(x float64) float32 { return npy.BF16ToF32(npy.BF16FromF64(x)) }

func newAttnCase(seed uint64, b, hq, hkv, d, bs int, lens []int) *attnCase {
	r := rand.New(rand.NewPCG(seed, 99))
	maxb := 1
	used := 0
	for _, l := range lens {
		nb := (l + bs - 1) / bs
		maxb = max(maxb, nb)
		used += nb
	}
	maxb++ // one spare table column, never read
	nbPhys := used + 3
	c := &attnCase{
		dims:  golden.AttentionDims{B: b, Hq: hq, Hkv: hkv, D: d, NB: nbPhys, BS: bs, MAXB: maxb},
		scale: 1 / math.Sqrt(float64(d)),
	}
	c.q = make([]float32, b*hq*d)
	for i := range c.q {
		c.q[i] = bf16(r.NormFloat64())
	}
	n := nbPhys * bs * hkv * d
	c.kc, c.vc = make([]float32, n), make([]float32, n)
	nan := float32(math.NaN())
	for i := range c.kc {
		c.kc[i], c.vc[i] = nan, nan
	}
	perm := r.Perm(nbPhys)
	c.bt = make([]int32, b*maxb)
	c.cl = make([]int32, b)
	next := 0
	row := hkv * d
	for s, l := range lens {
		c.cl[s] = int32(l)
		nb := (l + bs - 1) / bs
		for i := range maxb {
			if i >= nb {
				c.bt[s*maxb+i] = []int32{-1, int32(nbPhys + 7)}[i%2]
				continue
			}
			p := perm[next]
			next++
			c.bt[s*maxb+i] = int32(p)
			for off := 0; off < bs && i*bs+off < l; off++ {
				for e := range row {
					o := (p*bs+off)*row + e
					c.kc[o] = bf16(r.NormFloat64())
					c.vc[o] = bf16(r.NormFloat64())
				}
			}
		}
	}
	return c
}

func (c *attnCase) paged() (out, lse []float64, err error) {
	out = make([]float64, c.dims.B*c.dims.Hq*c.dims.D)
	lse = make([]float64, c.dims.B*c.dims.Hq)
	err = golden.PagedAttention(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, c.dims, c.scale)
	return
}

// maxRelDiff returns max |a-b| / max(1e-300, rms(b)) over a and b.
func maxRelDiff(a, b []float64) float64 {
	var ss float64
	for _, x := range b {
		ss += x * x
	}
	rms := math.Max(math.Sqrt(ss/float64(max(1, len(b)))), 1e-300)
	var m float64
	for i := range a {
		d := math.Abs(a[i] - b[i])
		if a[i] != a[i] || b[i] != b[i] {
			d = math.Inf(1)
		}
		m = math.Max(m, d/rms)
	}
	return m
}

func hasNaN(x []float64) bool {
	for _, v := range x {
		if v != v {
			return true
		}
	}
	return false
}

// checksum hashes the raw bytes of any slice (NaN payloads included).
func checksum[E any](xs ...[]E) uint64 {
	h := fnv.New64a()
	for _, x := range xs {
		if len(x) == 0 {
			continue
		}
		b := unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), len(x)*int(unsafe.Sizeof(x[0])))
		h.Write(b)
	}
	return h.Sum64()
}

func bitsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
