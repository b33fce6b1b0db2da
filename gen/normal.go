package gen

import (
	"math"
	"math/bits"

	"github.com/goldset/goldset/internal/detmath"
	"github.com/goldset/goldset/npy"
)

// Ziggurat for the standard normal (Marsaglia & Tsang 2000, 256 layers,
// with numpy's float32 bit split: 8 bits layer, 1 bit sign, 23 bits
// magnitude per 32-bit draw). Tables are built at init with detmath, so they
// are the same bits on every architecture; testdata/zig_tables.txt holds them
// for reimplementers and TestZigTablesFile pins them.
const (
	zigN = 256
	zigR = 3.6541528853610088 // start of the tail (x of the widest layer)
	zigV = 4.92867323399e-3   // area of each layer under exp(-x*x/2)
)

var (
	zigK [zigN]uint32  // accept immediately when magnitude < zigK[i]
	zigW [zigN]float64 // layer width / 2**23
	zigF [zigN]float64 // exp(-x*x/2) at the layer's right edge (zigF[0] = 1)

	// zigDF[i] = zigF[i-1] - zigF[i] (i >= 1), the wedge test's factor,
	// the same float64 difference finish used to compute each time.
	zigDF [zigN]float64

	// zigKc is zigK's top 8 of 23 bits, the table the AVX-512 kernel looks
	// up with byte permutes instead of a gather: m>>15 < zigKc[i] implies
	// m < zigK[i] (accepted); otherwise the element is marked and finished
	// in Go, which tests m < zigK[i] exactly first (the tie m>>15 ==
	// zigKc[i] alone marks about 0.25% of elements).
	zigKc [zigN]byte
)

func init() {
	const m = 0x1p23
	dn := zigR
	tn := dn
	q := zigV / detmath.Exp(-0.5*dn*dn)
	zigK[0] = uint32(dn / q * m)
	zigK[1] = 0
	zigW[0] = q / m
	zigW[zigN-1] = dn / m
	zigF[0] = 1
	zigF[zigN-1] = detmath.Exp(-0.5 * dn * dn)
	for i := zigN - 2; i >= 1; i-- {
		dn = math.Sqrt(-2 * detmath.Log(zigV/dn+detmath.Exp(-0.5*dn*dn)))
		zigK[i+1] = uint32(dn / tn * m)
		tn = dn
		zigF[i] = detmath.Exp(-0.5 * dn * dn)
		zigW[i] = dn / m
	}
	for i, k := range zigK {
		zigKc[i] = byte(k >> 15)
	}
	for i := 1; i < zigN; i++ {
		zigDF[i] = zigF[i-1] - zigF[i]
	}
}

// zigSq holds, per layer, linear functions that bound exp(-x*x/2) from
// below and above over the layer's wedge (the |x| a rejected first
// candidate can have): a chord and a tangent, which is which depending on
// the curve's convexity there. A wedge test whose left side falls below
// the lower line accepts, one at or above the upper line rejects; only
// the rest evaluate detmath.Exp. Each line is widened by squeezeMargin,
// far more than the few-ulp errors of the bounds and of detmath.Exp, so
// the decision is always the exact comparison's: the bounds change speed,
// never bits (TestSqueezeAgreesWithExp).
var zigSq [zigN]squeeze

type squeeze struct {
	lo0, lo1, hi0, hi1 float64 // lo0 + lo1*|x| <= exp(-x*x/2) <= hi0 + hi1*|x|
	ok                 bool
}

const squeezeMargin = 1e-9

func init() {
	f := func(x float64) float64 { return detmath.Exp(-0.5 * x * x) }
	for i := 1; i < zigN; i++ {
		a := float64(float64(zigK[i]) * zigW[i])
		b := float64(0x1p23 * zigW[i])
		if !(a < b) || (a < 1 && b > 1) { // empty, or straddling the inflection at 1
			continue
		}
		fa, fb := f(a), f(b)
		chord1 := (fb - fa) / (b - a)
		chord0 := fa - float64(chord1*a)
		c := 0.5 * (a + b)
		fc := f(c)
		tan1 := float64(-c * fc)
		tan0 := fc - float64(tan1*c)
		sq := squeeze{ok: true}
		if a >= 1 { // convex: chord above, tangent below
			sq.lo0, sq.lo1, sq.hi0, sq.hi1 = tan0, tan1, chord0, chord1
		} else { // concave: chord below, tangent above
			sq.lo0, sq.lo1, sq.hi0, sq.hi1 = chord0, chord1, tan0, tan1
		}
		sq.lo0 -= squeezeMargin
		sq.hi0 += squeezeMargin
		zigSq[i] = sq
	}
}

// uniformOpen32 maps a 32-bit draw to (0, 1).
func uniformOpen32(u uint32) float64 { return (float64(u) + 0.5) * 0x1p-32 }

// zigWS is zigW with the sign folded in: zigWS[r&0x1ff] = +-zigW[r&0xff],
// negative when bit 8 of the draw is set. (-w)*m equals -(w*m) exactly in
// IEEE arithmetic, so this is just a faster way to apply the sign (and
// m = 0 with the sign bit gives -0.0).
var zigWS [2 * zigN]float64

func init() {
	for i := range zigN {
		zigWS[i], zigWS[zigN+i] = zigW[i], -zigW[i]
	}
}

// Chunk normals (see doc.go): element k of a chunk first tries the k-th
// 32-bit draw of the chunk generator (the low, then the high half of words
// 1..ChunkElems/2). Elements whose first candidate is rejected (about 1.2%)
// are finished afterwards, in ascending k, with "overflow" draws: the same
// generator continued after word ChunkElems/2. The fast pass thus has no
// data-dependent control flow except a rarely taken mark, and no element's
// first draw depends on another element's rejections.

// rejectMask marks rejected elements of a chunk.
type rejectMask [ChunkElems / 64]uint64

func (m *rejectMask) set(k int)      { m[k>>6&3] |= 1 << (k & 63) }
func (m *rejectMask) has(k int) bool { return m[k>>6&3]&(1<<(k&63)) != 0 }

// primary returns the first 32-bit draw of element k of the chunk whose
// generator starts at state.
func primary(state uint64, k int) uint32 {
	g := wyrand{s: state + uint64(k/2)*wyInc}
	w := g.next64()
	return uint32(w >> (32 * (k & 1)))
}

// candidate is the ziggurat candidate of draw r and whether it is accepted
// at once.
func candidate(r uint32) (float64, bool) {
	m := r >> 9
	return float64(m) * zigWS[r&0x1ff], m < zigK[uint8(r)]
}

// chunkNormals writes the standard normals of elements [0, len(dst)) of the
// chunk whose generator starts at state (len(dst) <= ChunkElems).
func chunkNormals(state uint64, dst []float64) {
	var rej rejectMask
	bad := false
	s := state
	n := len(dst)
	for k := 0; k+1 < n; k += 2 {
		s += wyInc
		hi, lo := bits.Mul64(s, s^wyXor)
		w := hi ^ lo
		r0, r1 := uint32(w), uint32(w>>32)
		m0, m1 := r0>>9, r1>>9
		dst[k] = float64(m0) * zigWS[r0&0x1ff]
		dst[k+1] = float64(m1) * zigWS[r1&0x1ff]
		if m0 >= zigK[uint8(r0)] || m1 >= zigK[uint8(r1)] {
			if m0 >= zigK[uint8(r0)] {
				rej.set(k)
			}
			if m1 >= zigK[uint8(r1)] {
				rej.set(k + 1)
			}
			bad = true
		}
	}
	if n&1 != 0 {
		x, ok := candidate(primary(state, n-1))
		dst[n-1] = x
		if !ok {
			rej.set(n - 1)
			bad = true
		}
	}
	if bad {
		o := wyrand{s: overflowState(state)}
		for k := range n {
			if rej.has(k) {
				dst[k] = finish(&o, primary(state, k))
			}
		}
	}
}

// f16s writes RNE(src[i]*scale) as float16 bits (local bulk fast path).
func f16s(dst []uint16, src []float64, scale float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		h, ok := f16Fast(v * scale)
		if !ok {
			h = npy.F16FromF64(v * scale)
		}
		dst[i] = h
	}
}

// bf16s writes RNE(src[i]*scale) as bfloat16 bits (local bulk fast path).
func bf16s(dst []uint16, src []float64, scale float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		h, ok := bf16Fast(v * scale)
		if !ok {
			h = npy.BF16FromF64(v * scale)
		}
		dst[i] = h
	}
}

// overflowState is the chunk generator's state after its ChunkElems/2
// primary words (wrapping arithmetic).
func overflowState(state uint64) uint64 {
	inc := uint64(wyInc)
	return state + ChunkElems/2*inc
}

// finish completes an element whose primary draw r was rejected, using
// overflow draws from o: tail or wedge test for r's layer, then full
// restarts with fresh draws until a candidate is accepted.
func finish(o *wyrand, r uint32) float64 {
	x, ok := candidate(r)
	if ok {
		return x
	}
	return finishRejected(o, r, x)
}

// finishRejected is finish for a draw r already known to be rejected, x
// being its candidate (the AVX-512 path tests acceptance before calling).
func finishRejected(o *wyrand, r uint32, x float64) float64 {
	for {
		idx := uint8(r)
		if idx == 0 {
			for {
				xx := -detmath.Log(uniformOpen32(o.next32())) / zigR
				yy := -detmath.Log(uniformOpen32(o.next32()))
				if yy+yy > float64(xx*xx) {
					if r&0x100 != 0 {
						return -(zigR + xx)
					}
					return zigR + xx
				}
			}
		}
		u := uniformOpen32(o.next32())
		lhs := float64(zigDF[idx]*u) + zigF[idx]
		rejected := false
		if sq := &zigSq[idx]; sq.ok {
			// Decide without Exp when lhs is clear of the squeeze band.
			ax := math.Abs(x)
			if lhs < sq.lo0+float64(sq.lo1*ax) {
				return x
			}
			rejected = lhs >= sq.hi0+float64(sq.hi1*ax)
		}
		if !rejected && lhs < detmath.Exp(-0.5*x*x) {
			return x
		}
		r = o.next32()
		var ok bool
		if x, ok = candidate(r); ok {
			return x
		}
	}
}

// Float64 -> float16/bfloat16 rounding, fast path: for |x| in the normal
// range of the format, round to nearest even with integer arithmetic on
// the float64 bits (the exponent is rebiased by subtraction, a mantissa
// carry propagates into the exponent, as it should). Outside it (zero,
// subnormal, overflow, NaN) ok is false and npy's converter is used.
const (
	f16Lo, f16Hi   = 0x3f10000000000000, 0x40effe0000000000 // 2**-14, 65520 (rounds to Inf)
	bf16Lo, bf16Hi = 0x3810000000000000, 0x47eff00000000000 // 2**-126, 0x1.ffp127
)

func f16Fast(x float64) (uint16, bool) {
	b := math.Float64bits(x)
	a := b &^ (1 << 63)
	if a-f16Lo >= f16Hi-f16Lo {
		return 0, false
	}
	a += 1<<41 - 1 + (a>>42)&1 // round half to even at bit 42
	a -= (1023 - 15) << 52     // rebias the exponent
	return uint16(b>>48)&0x8000 | uint16(a>>42), true
}

func bf16Fast(x float64) (uint16, bool) {
	b := math.Float64bits(x)
	a := b &^ (1 << 63)
	if a-bf16Lo >= bf16Hi-bf16Lo {
		return 0, false
	}
	a += 1<<44 - 1 + (a>>45)&1
	a -= (1023 - 127) << 52
	return uint16(b>>48)&0x8000 | uint16(a>>45), true
}
