//go:build !purego

package golden

import "golang.org/x/sys/cpu"

// hasAttnVec selects the AVX-512 attention tiles of attn_amd64.s (tests
// turn it off to get the scalar reference). The half kernels also use the
// VEX forms of F16C and AVX2.
var hasAttnVec = cpu.X86.HasAVX512F && cpu.X86.HasAVX && cpu.X86.HasAVX2 && cpu.X86.HasF16C

// The score tiles write s[h*ls + j] = scale * (sum over e < d, in order,
// of q_h[e]*k_j[e]) for four heads h and n tokens j (n even, d%8 == 0),
// token j's row at k[j*rs]. q is the quad's query laid out [d][4][2] (each
// value twice, see fillQT). The tiles read only the rows of the n tokens
// (they prefetch further, which cannot fault).

//go:noescape
func attnQKF32(s *float64, ls int, q *float64, k *float32, rs, d, n int, scale float64)

//go:noescape
func attnQKF16(s *float64, ls int, q *float64, k *uint16, rs, d, n int, scale float64)

//go:noescape
func attnQKBF16(s *float64, ls int, q *float64, k *uint16, rs, d, n int, scale float64)

// The value tiles do acc[h*d + e] += p[h*ls + j] * v_j[e] for four heads
// h, every e < d (d%8 == 0) and tokens j = 0..n-1 in order, token j's row
// at v[j*rs].

//go:noescape
func attnPVF32(acc *float64, p *float64, ls int, v *float32, rs, d, n int)

//go:noescape
func attnPVF16(acc *float64, p *float64, ls int, v *uint16, rs, d, n int)

//go:noescape
func attnPVBF16(acc *float64, p *float64, ls int, v *uint16, rs, d, n int)

// qkQuad runs the score tile for a quad of heads over n tokens (n even)
// whose rows start at offset o of c with stride rs. s starts at the first
// head's first score; ls is the head stride of s.
func qkQuad(s []float64, ls int, qt []float64, c kvView, o, rs, d, n int, scale float64) {
	if n <= 0 {
		return
	}
	_ = s[3*ls+n-1]
	_ = qt[8*d-1]
	last := o + (n-1)*rs + d - 1
	switch {
	case !c.half:
		_ = c.f[last]
		attnQKF32(&s[0], ls, &qt[0], &c.f[o], rs, d, n, scale)
	case c.bf:
		_ = c.h[last]
		attnQKBF16(&s[0], ls, &qt[0], &c.h[o], rs, d, n, scale)
	default:
		_ = c.h[last]
		attnQKF16(&s[0], ls, &qt[0], &c.h[o], rs, d, n, scale)
	}
}

// pvQuad runs the value tile for a quad of heads over n tokens; acc holds
// the four heads' accumulators, p their probabilities (head stride ls).
func pvQuad(acc, p []float64, ls int, c kvView, o, rs, d, n int) {
	if n <= 0 {
		return
	}
	_ = acc[4*d-1]
	_ = p[3*ls+n-1]
	last := o + (n-1)*rs + d - 1
	switch {
	case !c.half:
		_ = c.f[last]
		attnPVF32(&acc[0], &p[0], ls, &c.f[o], rs, d, n)
	case c.bf:
		_ = c.h[last]
		attnPVBF16(&acc[0], &p[0], ls, &c.h[o], rs, d, n)
	default:
		_ = c.h[last]
		attnPVF16(&acc[0], &p[0], ls, &c.h[o], rs, d, n)
	}
}
