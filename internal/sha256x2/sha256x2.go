package sha256x2

import (
	"encoding/binary"
	"hash"
	"math/bits"
)

// Size and BlockSize are SHA-256's.
const (
	Size      = 32
	BlockSize = 64
)

// ForceGo makes every Digest use the portable block function (tests and
// benchmarks compare the two).
var ForceGo = false

var k256 = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

var initState = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}

// Digest is a SHA-256 hash.Hash.
type Digest struct {
	h   [8]uint32
	x   [BlockSize]byte // pending bytes of a partial block
	nx  int
	len uint64
}

var _ hash.Hash = (*Digest)(nil)

// New returns a reset Digest.
func New() *Digest {
	d := new(Digest)
	d.Reset()
	return d
}

func (d *Digest) Reset() {
	d.h, d.nx, d.len = initState, 0, 0
}

func (d *Digest) Size() int      { return Size }
func (d *Digest) BlockSize() int { return BlockSize }

func (d *Digest) Write(p []byte) (int, error) {
	d.len += uint64(len(p))
	d.write(p)
	return len(p), nil
}

// write hashes p without counting it in d.len.
func (d *Digest) write(p []byte) {
	if p = d.fill(p); d.nx > 0 { // all of p went into the partial block
		return
	}
	if whole := len(p) &^ (BlockSize - 1); whole > 0 {
		block(&d.h, p[:whole])
		p = p[whole:]
	}
	d.nx = copy(d.x[:], p)
}

// fill adds p's head to the pending partial block (hashing it when it
// completes) and returns the rest of p; on return d.nx is 0 unless p was
// used up.
func (d *Digest) fill(p []byte) []byte {
	if d.nx == 0 {
		return p
	}
	k := copy(d.x[d.nx:], p)
	d.nx += k
	if d.nx == BlockSize {
		block(&d.h, d.x[:])
		d.nx = 0
	}
	return p[k:]
}

// Sum appends the digest of what was written so far to b; d is unchanged.
func (d *Digest) Sum(b []byte) []byte {
	c := *d
	var pad [BlockSize + 8]byte
	pad[0] = 0x80
	bitsLen := c.len << 3
	padLen := 55 - int(c.len%64)
	if padLen < 0 {
		padLen += 64
	}
	binary.BigEndian.PutUint64(pad[1+padLen:], bitsLen)
	c.write(pad[:1+padLen+8])
	for _, v := range c.h {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// Pair writes pa to a and pb to b, as a.Write(pa) and b.Write(pb) would:
// the whole blocks the two have in common go through the two-message
// block function. a and b must be different digests.
func Pair(a *Digest, pa []byte, b *Digest, pb []byte) {
	if a == b {
		panic("sha256x2: Pair of a digest with itself")
	}
	a.len += uint64(len(pa))
	b.len += uint64(len(pb))
	pa, pb = a.fill(pa), b.fill(pb)
	if a.nx == 0 && b.nx == 0 {
		if n := min(len(pa), len(pb)) / BlockSize; n > 0 {
			block2(&a.h, &b.h, pa[:n*BlockSize], pb[:n*BlockSize])
			pa, pb = pa[n*BlockSize:], pb[n*BlockSize:]
		}
	}
	a.write(pa) // the rest one at a time
	b.write(pb)
}

// blockGeneric is FIPS 180-4's compression, one block at a time.
func blockGeneric(h *[8]uint32, p []byte) {
	var w [64]uint32
	h0, h1, h2, h3, h4, h5, h6, h7 := h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
	for len(p) >= BlockSize {
		for i := range 16 {
			w[i] = binary.BigEndian.Uint32(p[4*i:])
		}
		for i := 16; i < 64; i++ {
			v1 := w[i-2]
			t1 := bits.RotateLeft32(v1, -17) ^ bits.RotateLeft32(v1, -19) ^ (v1 >> 10)
			v2 := w[i-15]
			t2 := bits.RotateLeft32(v2, -7) ^ bits.RotateLeft32(v2, -18) ^ (v2 >> 3)
			w[i] = t1 + w[i-7] + t2 + w[i-16]
		}
		a, b, c, d, e, f, g, hh := h0, h1, h2, h3, h4, h5, h6, h7
		for i := range 64 {
			t1 := hh + (bits.RotateLeft32(e, -6) ^ bits.RotateLeft32(e, -11) ^ bits.RotateLeft32(e, -25)) + ((e & f) ^ (^e & g)) + k256[i] + w[i]
			t2 := (bits.RotateLeft32(a, -2) ^ bits.RotateLeft32(a, -13) ^ bits.RotateLeft32(a, -22)) + ((a & b) ^ (a & c) ^ (b & c))
			hh, g, f, e, d, c, b, a = g, f, e, d+t1, c, b, a, t1+t2
		}
		h0 += a
		h1 += b
		h2 += c
		h3 += d
		h4 += e
		h5 += f
		h6 += g
		h7 += hh
		p = p[BlockSize:]
	}
	h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7] = h0, h1, h2, h3, h4, h5, h6, h7
}
