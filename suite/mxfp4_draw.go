package suite

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
)

// MXFP4 weights of the GEMM and MoE cases (docs/spec.md §9d-e) are drawn
// as codes and scale bytes directly: a weight that enters a kernel only
// in MXFP4 needs no float values, and drawing bf16 normals only to
// quantize them cost most of the suite's build time. The distributions
// are those of bf16 normals quantized by §9a, measured once (2^24
// standard normals in blocks of 32 per mode) and fixed here.

// mxWeightTable is one scale mode's distribution: mag[m] is the weight
// (of 2^15) of E2M1 magnitude code m, given to each sign; off[i] is an
// E8M0 byte offset from 127 + e0 (e0: the power of two nearest the
// weights' std) with weight offW[i] (of 2^16).
type mxWeightTable struct {
	mag  [8]uint32
	off  []int
	offW []uint32
}

// mxWeightTables is indexed by golden.ScaleMode (rceil, floor, ceil, even).
var mxWeightTables = [...]mxWeightTable{
	{mag: [8]uint32{3509, 6645, 5957, 4783, 5375, 4024, 2156, 319}, off: []int{-2, -1, 0}, offW: []uint32{695, 59528, 5313}},
	{mag: [8]uint32{2902, 5582, 5212, 4421, 5338, 4372, 3297, 1644}, off: []int{-2, -1, 0}, offW: []uint32{14527, 50875, 134}},
	{mag: [8]uint32{5727, 10151, 7474, 4378, 3331, 1408, 299, 0}, off: []int{-1, 0, 1}, offW: []uint32{15160, 50253, 123}},
	{mag: [8]uint32{3202, 6132, 5656, 4706, 5508, 4225, 2649, 690}, off: []int{-2, -1, 0}, offW: []uint32{4459, 60073, 1004}},
}

// mxZeroBlocks of 2^16 blocks (1/64) hold only zero codes (0 and 8),
// which no normal block gives but real checkpoints and kernels' skip
// paths do.
const mxZeroBlocks = 1024

// mxPairBits is the index width of a pair table: 2^14 bytes fit in a
// core's L1 data cache beside the words (2^16 measured no faster), and
// cells of 2^-14 keep every code's frequency within 16*2^-14 of its
// table weight.
const mxPairBits = 14

// mxPairTables maps 14 random bits to one packed code byte (low nibble
// element 2i, high nibble 2i+1): the 256 pairs in ascending byte order
// get cells of floor(w_lo*w_hi / 2^18) entries (w: the code's weight of
// 2^16, for either sign its magnitude's mag of 2^15), and the entries
// left go one each to the pairs with the largest remainders (lower byte
// first on ties). Integer arithmetic only: the same table on every
// machine.
var mxPairTables = sync.OnceValue(func() (t [len(mxWeightTables)]*[1 << mxPairBits]byte) {
	for m, wt := range mxWeightTables {
		var cell, rem [256]uint64
		left := uint64(1 << mxPairBits)
		for p := range 256 {
			w := uint64(wt.mag[p&7]) * uint64(wt.mag[p>>4&7]) // of 2^32
			cell[p], rem[p] = w>>(32-mxPairBits), w&(1<<(32-mxPairBits)-1)
			left -= cell[p]
		}
		for ; left > 0; left-- {
			best := 0
			for p := range 256 {
				if rem[p] > rem[best] {
					best = p
				}
			}
			cell[best]++
			rem[best] = 0
		}
		tab := new([1 << mxPairBits]byte)
		i := 0
		for p, n := range cell {
			for range n {
				tab[i] = byte(p)
				i++
			}
		}
		t[m] = tab
	}
	return t
})

// mxWeightExp is e0, the exponent of the power of two nearest std
// (std = f*2^e with f in [0.5, 1): e when f >= sqrt(1/2), else e-1).
func mxWeightExp(std float64) int {
	f, e := math.Frexp(std)
	if f >= math.Sqrt2/2 {
		return e
	}
	return e - 1
}

// checkMXWeightStd keeps every drawn scale byte in [1, 252] (finite,
// no edge bytes: those are the edge split's).
func checkMXWeightStd(name string, std float64) error {
	if e := mxWeightExp(std); e < -124 || e > 124 {
		return errParams("%s = %v: scale bytes near 2^%d would leave [1, 252]", name, std, e)
	}
	return nil
}

// drawMXWeights fills codes [nb*16] and scales [nb] (nb = len(scales))
// with blocks at+0 .. at+nb-1 of a weight drawn in scale mode mode with
// std std: block b's 16 code bytes are pairs[f & (2^14-1)] for the 16-bit
// fields f of words 4b..4b+3 of cs (low field first), its scale byte
// 127 + e0 + off[i] for the
// first i with the low 16 bits of word b of ss below offW[0]+..+offW[i],
// and bits 16..31 of that word below mxZeroBlocks clear its magnitudes
// (codes & 0x88).
func drawMXWeights(cs, ss gen.Stream, codes, scales []byte, at int64, mode golden.ScaleMode, std float64) {
	wt := &mxWeightTables[mode]
	pairs := mxPairTables()[mode]
	base := 127 + mxWeightExp(std)
	const step = 256
	gen.Parallel(0, at, len(scales), func(lo, hi int) {
		var cw [4 * step]uint64
		var sw [step]uint64
		for b0 := lo; b0 < hi; b0 += step {
			n := min(step, hi-b0)
			gen.Words(cs, cw[:4*n], 4*(at+int64(b0)))
			gen.Words(ss, sw[:n], at+int64(b0))
			for i, w := range sw[:n] {
				b := b0 + i
				lo, hi := pairs8(pairs, cw[4*i], cw[4*i+1]), pairs8(pairs, cw[4*i+2], cw[4*i+3])
				if uint16(w>>16) < mxZeroBlocks {
					lo &= 0x8888888888888888
					hi &= 0x8888888888888888
				}
				binary.LittleEndian.PutUint64(codes[16*b:], lo)
				binary.LittleEndian.PutUint64(codes[16*b+8:], hi)
				u, cum, k := uint32(uint16(w)), uint32(0), 0
				for k = range wt.offW {
					if cum += wt.offW[k]; u < cum {
						break
					}
				}
				scales[b] = byte(base + wt.off[k])
			}
		}
	})
}

// pairs8 is the 8 code bytes of words x and y (16-bit fields, low first).
func pairs8(pairs *[1 << mxPairBits]byte, x, y uint64) uint64 {
	const m = 1<<mxPairBits - 1
	return uint64(pairs[x&m]) | uint64(pairs[x>>16&m])<<8 | uint64(pairs[x>>32&m])<<16 | uint64(pairs[x>>48&m])<<24 |
		uint64(pairs[y&m])<<32 | uint64(pairs[y>>16&m])<<40 | uint64(pairs[y>>32&m])<<48 | uint64(pairs[y>>48&m])<<56
}
