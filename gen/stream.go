package gen

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"

	"github.com/goldset/goldset/internal/cpuslots"
)

// Version is the generator version. Changing any output bit of any function
// in this package requires bumping it (and VersionTag), never editing the
// frozen regression vectors in the tests.
const Version = 1

// VersionTag is the first field of the key derivation (see doc.go).
const VersionTag = "goldset/gen/v1"

// ChunkElems is the number of elements produced by one chunk generator.
// It is a power of two that divides every paged-KV block (BS*Hkv*D >= 256),
// so one physical block is always a whole number of chunks.
const ChunkElems = 256

// seqChunk is the chunk index reserved for the sequential generator
// (Stream.Rand); element chunks are < 2**55.
const seqChunk = ^uint64(0)

// Stream identifies one tensor's random values: a 256-bit key derived from
// (VersionTag, seed, case id, tensor name). It is a small value; copy freely.
type Stream struct {
	key [4]uint64
}

// NewStream derives the stream of tensor `tensor` in case `caseID` of a suite
// with seed `seed` (SHA-256 of a length-prefixed encoding, see doc.go).
func NewStream(seed uint64, caseID, tensor string) Stream {
	h := sha256.New()
	field := func(p []byte) {
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	field([]byte(VersionTag))
	var sb [8]byte
	binary.LittleEndian.PutUint64(sb[:], seed)
	field(sb[:])
	field([]byte(caseID))
	field([]byte(tensor))
	var sum [32]byte
	h.Sum(sum[:0])
	var s Stream
	for i := range s.key {
		s.key[i] = binary.LittleEndian.Uint64(sum[8*i:])
	}
	return s
}

// Key returns the 256-bit stream key as four little-endian words (for
// manifests and cross-checks).
func (s Stream) Key() [4]uint64 { return s.key }

// mix64 is the SplitMix64 finalizer (a bijection on uint64).
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// chunkState is the initial wyrand state of chunk c. For a fixed key it is a
// bijection of c, so no two chunks of a stream start from the same state.
func (s Stream) chunkState(c uint64) uint64 {
	return mix64(mix64(c^s.key[0]) + s.key[1])
}

const (
	wyInc = 0xa0761d6478bd642f
	wyXor = 0xe7037ed1a0b428db
)

// wyrand is the generator behind every chunk (Wang Yi's wyrand).
type wyrand struct {
	s    uint64
	hi   uint32 // unused upper half of the last word (32-bit draws)
	half bool   // hi is pending
}

func (g *wyrand) next64() uint64 {
	g.s += wyInc
	hi, lo := bits.Mul64(g.s, g.s^wyXor)
	return hi ^ lo
}

// next32 returns the low half of a fresh word, then its high half.
func (g *wyrand) next32() uint32 {
	if g.half {
		g.half = false
		return g.hi
	}
	w := g.next64()
	g.hi = uint32(w >> 32)
	g.half = true
	return uint32(w)
}

// Rand is the sequential generator of a stream, for draws that are not one
// value per element (permutations, choices, per-row decisions). It is the
// 64-bit word sequence of the reserved chunk index 2**64-1. Not safe for
// concurrent use.
type Rand struct {
	g wyrand
}

// Rand returns a fresh sequential generator of s (always the same sequence).
func (s Stream) Rand() *Rand {
	return &Rand{g: wyrand{s: s.chunkState(seqChunk)}}
}

// Uint64 returns the next 64-bit word.
func (r *Rand) Uint64() uint64 { return r.g.next64() }

// Float64 returns a uniform value in [0, 1): (word >> 11) * 2**-53.
func (r *Rand) Float64() float64 { return float64(r.g.next64()>>11) * 0x1p-53 }

// IntN returns a uniform integer in [0, n) without modulo bias (Lemire's
// multiply-and-reject on 64-bit words). It panics if n <= 0.
func (r *Rand) IntN(n int) int {
	if n <= 0 {
		panic("gen: IntN with n <= 0")
	}
	return int(lemire(&r.g, uint64(n)))
}

// lemire returns a uniform integer in [0, n), n >= 1.
func lemire(g *wyrand, n uint64) uint64 {
	hi, lo := bits.Mul64(g.next64(), n)
	if lo < n {
		t := -n % n // 2**64 mod n
		for lo < t {
			hi, lo = bits.Mul64(g.next64(), n)
		}
	}
	return hi
}

// Choice returns k distinct integers from [0, n) in draw order: the first k
// entries of a forward Fisher-Yates shuffle of 0..n-1 (for i < k: swap a[i]
// and a[i + IntN(n-i)]). Memory is O(k) when k is small relative to n. It
// panics unless 0 <= k <= n.
func (r *Rand) Choice(n, k int) []int {
	if k < 0 || k > n {
		panic("gen: Choice needs 0 <= k <= n")
	}
	out := make([]int, k)
	if n <= 1<<16 || n <= 4*k {
		a := make([]int, n)
		for i := range a {
			a[i] = i
		}
		for i := 0; i < k; i++ {
			j := i + r.IntN(n-i)
			a[i], a[j] = a[j], a[i]
		}
		copy(out, a[:k])
		return out
	}
	// Sparse shuffle: only moved entries are stored.
	moved := make(map[int]int, 2*k)
	at := func(i int) int {
		if v, ok := moved[i]; ok {
			return v
		}
		return i
	}
	for i := 0; i < k; i++ {
		j := i + r.IntN(n-i)
		vi, vj := at(i), at(j)
		moved[i], moved[j] = vj, vi
		out[i] = vj
	}
	return out
}

// Perm returns a random permutation of 0..n-1: Choice(n, n).
func (r *Rand) Perm(n int) []int { return r.Choice(n, n) }

// pieceElems is the unit of work of Parallel: 64 chunks.
const pieceElems = 64 * ChunkElems

// Parallel calls fn(lo, hi) over [0, n) split into pieces whose absolute
// starts at+lo are multiples of 64*ChunkElems, on `workers` goroutines
// (<= 0: GOMAXPROCS). Because every fill in this package depends only on
// absolute element indices, the result is the same for any worker count.
// fn must only write the elements [lo, hi) of its destination.
func Parallel(workers int, at int64, n int, fn func(lo, hi int)) {
	if at < 0 || n < 0 {
		panic("gen: Parallel with negative range")
	}
	if n == 0 {
		return
	}
	// Boundaries: 0, the first aligned index after 0, then every pieceElems.
	first := int((pieceElems - at%pieceElems) % pieceElems)
	if first == 0 {
		first = pieceElems
	}
	pieces := 1
	if n > first {
		pieces += (n - first + pieceElems - 1) / pieceElems
	}
	bounds := func(p int) (int, int) {
		lo, hi := 0, first
		if p > 0 {
			lo = first + (p-1)*pieceElems
			hi = lo + pieceElems
		}
		return lo, min(hi, n)
	}
	if workers <= 0 {
		workers = cpuslots.Procs()
	}
	workers = min(workers, pieces)
	if workers == 1 {
		for p := range pieces {
			fn(bounds(p))
		}
		return
	}
	cpuslots.For(workers, pieces, func(_, p int) { fn(bounds(p)) })
}
