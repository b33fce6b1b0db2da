package golden

import (
	"fmt"
	"math"

	"github.com/goldset/goldset/internal/detmath"
	"github.com/goldset/goldset/npy"
)

// gpt-oss's SwiGLU constants (gpt_oss/torch/model.py swiglu, ModelConfig.swiglu_limit).
const (
	SwiGLUAlpha = 1.702
	SwiGLULimit = 7.0
)

// MoEDims are the sizes of an mxfp4_moe case (ops.md §9e).
type MoEDims struct {
	T    int // tokens
	Hd   int // hidden size, a multiple of 32
	I    int // intermediate size per expert, a multiple of 32 (W1 has 2I rows)
	E    int // experts
	TopK int // experts per token, in [1, E]
	// RoundAct rounds the SwiGLU activations a once to bfloat16 (RNE) before
	// the second GEMM, as the matmul_ogs chain does (gpt-oss's triton MoE and
	// vLLM's OAI Triton experts store the fused-activation output of the
	// first GEMM in the activation dtype); false keeps them exact.
	RoundAct bool
}

func (d MoEDims) check() error {
	if d.T < 0 || d.Hd <= 0 || d.I <= 0 || d.E <= 0 {
		return fmt.Errorf("golden: moe dims %+v: sizes must be positive (T >= 0): %w", d, ErrInvalidParams)
	}
	if d.Hd%MXBlock != 0 || d.I%MXBlock != 0 {
		return fmt.Errorf("golden: moe dims %+v: Hd and I must be multiples of %d: %w", d, MXBlock, ErrInvalidParams)
	}
	if d.TopK < 1 || d.TopK > d.E {
		return fmt.Errorf("golden: moe dims %+v: TopK not in [1, E]: %w", d, ErrInvalidParams)
	}
	return nil
}

// MoEWeights are the per-expert MXFP4 weights and bf16 biases of §9e, in
// gpt-oss's checkpoint layout (rows of W1 interleave glu and linear).
type MoEWeights struct {
	W1Codes  []uint8  // [E, 2I, Hd/2]
	W1Scales []uint8  // [E, 2I, Hd/32]
	B1       []uint16 // [E, 2I] bfloat16 bits
	W2Codes  []uint8  // [E, Hd, I/2]
	W2Scales []uint8  // [E, Hd, I/32]
	B2       []uint16 // [E, Hd] bfloat16 bits
}

func (w *MoEWeights) checkLens(d MoEDims) {
	checkMXLens(w.W1Codes, w.W1Scales, d.E*2*d.I, d.Hd)
	checkMXLens(w.W2Codes, w.W2Scales, d.E*d.Hd, d.I)
	if len(w.B1) != d.E*2*d.I || len(w.B2) != d.E*d.Hd {
		panic(badLenBias)
	}
}

// MoERoute is §9e's router: for each token the TopK largest of logits
// [T, E] (descending, equal logits by lower expert index first: torch.topk
// sorted=True on distinct values), ids [T, TopK]; weights [T, TopK] is the
// float64 softmax over the selected logits, exp(l_j - l_0) / sum over j in
// rank order (detmath.Exp). Logits must be finite.
func MoERoute(ids []int32, weights []float64, logits []float32, t, e, topk int) error {
	if t < 0 || e <= 0 || topk < 1 || topk > e {
		return fmt.Errorf("golden: moe route T=%d E=%d TopK=%d: %w", t, e, topk, ErrInvalidParams)
	}
	if len(logits) != t*e {
		panic(badLenLogits)
	}
	if len(ids) != t*topk || len(weights) != t*topk {
		panic(badLenDst)
	}
	for i, v := range f32Bits(logits) {
		if v&0x7f800000 == 0x7f800000 {
			return fmt.Errorf("golden: moe route: logits[%d, %d] = %v: %w", i/e, i%e, logits[i], ErrNonFinite)
		}
	}
	for tok := range t {
		row := logits[tok*e : (tok+1)*e]
		sel := ids[tok*topk : (tok+1)*topk]
		// Selection by repeated scans keeps the tie rule obvious; TopK is small.
		for j := range sel {
			best := -1
			for x, v := range row {
				if taken(sel[:j], x) {
					continue
				}
				if best < 0 || v > row[best] {
					best = x
				}
			}
			sel[j] = int32(best)
		}
		w := weights[tok*topk : (tok+1)*topk]
		m := float64(row[sel[0]])
		var sum float64
		for j, x := range sel {
			w[j] = detmath.Exp(float64(row[x]) - m)
			sum += w[j]
		}
		for j := range w {
			w[j] /= sum
		}
	}
	return nil
}

func taken(sel []int32, x int) bool {
	for _, s := range sel {
		if int(s) == x {
			return true
		}
	}
	return false
}

// SwiGLU is gpt-oss's activation in float64 on one (glu, linear) pair:
// glu clamped above at limit, linear to [-limit, limit], then
// glu*sigmoid(alpha*glu) * (linear + 1), sigmoid(z) = 1/(1+exp(-z)).
func SwiGLU(glu, lin float64) float64 {
	glu = min(glu, SwiGLULimit)
	lin = min(max(lin, -SwiGLULimit), SwiGLULimit)
	sig := 1 / (1 + detmath.Exp(-float64(SwiGLUAlpha*glu)))
	return float64(float64(glu*sig) * (lin + 1))
}

// MXFP4MoE computes §9e's gpt-oss MoE block (without the residual: the
// output of triton_kernels' matmul_ogs chain in gpt_oss/triton/moe.py) for
// x [T, Hd] bfloat16 bits and logits [T, E] float32 into out [T, Hd]
// float64, and the number of tokens routed to each expert into counts [E].
// For token t with experts e_j and weights w_j from MoERoute:
//
//	h   = W1[e_j] @ x_t + b1[e_j]          [2I]  float64 sums over ascending Hd, bias added last
//	a_i = SwiGLU(h[2i], h[2i+1])           [I]   interleaved glu / linear; with d.RoundAct rounded once to bf16
//	o_j = W2[e_j] @ a + b2[e_j]            [Hd]  float64 sums over ascending I, bias added last
//	out = sum_j float64(w_j * o_j)         j in rank order, from 0
//
// Nothing else is rounded inside; the caller rounds out once to bf16.
func MXFP4MoE(out []float64, counts []int64, x []uint16, logits []float32, w MoEWeights, d MoEDims) error {
	if err := d.check(); err != nil {
		return err
	}
	if len(x) != d.T*d.Hd {
		panic(badLenX)
	}
	if len(out) != d.T*d.Hd {
		panic(badLenOut)
	}
	if len(counts) != d.E {
		panic(badLenCounts)
	}
	w.checkLens(d)
	ids := make([]int32, d.T*d.TopK)
	wts := make([]float64, d.T*d.TopK)
	if err := MoERoute(ids, wts, logits, d.T, d.E, d.TopK); err != nil {
		return err
	}
	clear(counts)
	for _, e := range ids {
		counts[e]++
	}
	hd, in, k := d.Hd, d.I, d.TopK
	// Tokens go in chunks so the per-(token, rank) buffers stay bounded;
	// every result is a sum over one token, so chunking changes no bit.
	chunk := max(1, moeChunkBytes/(8*k*(hd+3*in)))
	var sc MoEScratch
	obuf := make([]float64, min(chunk, d.T)*k*hd)
	for t0 := 0; t0 < d.T; t0 += chunk {
		t1 := min(d.T, t0+chunk)
		// Rows of (token, rank) per expert, ascending.
		rows := make([][]int, d.E)
		for i := t0 * k; i < t1*k; i++ {
			rows[ids[i]] = append(rows[ids[i]], i)
		}
		for e, rs := range rows {
			if len(rs) == 0 {
				continue
			}
			if err := moeExpert(obuf, nil, rs, t0*k, x, w, d, e, &sc); err != nil {
				return err
			}
		}
		for tok := t0; tok < t1; tok++ {
			dst := out[tok*hd : (tok+1)*hd]
			clear(dst)
			for j := range k {
				wj := wts[tok*k+j]
				o := (tok-t0)*k + j
				for c, v := range obuf[o*hd : (o+1)*hd] {
					dst[c] += float64(wj * v)
				}
			}
		}
	}
	return nil
}

// moeChunkBytes bounds MXFP4MoE's per-chunk float64 buffers.
var moeChunkBytes = 256 << 20

// MXFP4MoEExpert runs one expert of §9e on nt token rows xs [nt, Hd]
// (bfloat16 bits), with that expert's W1 (codes [2I, Hd/2], scales [2I,
// Hd/32], b1 [2I]) and W2 (codes [Hd, I/2], scales [Hd, I/32], b2 [Hd]):
// o [nt, Hd] = W2 a + b2, a = SwiGLU(W1 x + b1), bit for bit what
// MXFP4MoE computes for a (token, expert) pair, so a caller holding one
// expert's weights at a time (package suite streams them) can combine the
// ranks itself: out = sum_j float64(w_j*o_j) in rank order from 0;
// roundAct is MoEDims.RoundAct. With s
// non-nil it also writes the bound s [nt, Hd] = sum_i |a_i*w2[c,i]| +
// |b2[c]| (float64, ascending i). sc (nil: allocate) holds the decoded
// weights between calls, so a caller running many experts does not clear
// 12*Hd*I bytes per expert.
func MXFP4MoEExpert(o, s []float64, xs []uint16, nt int, w1c, w1s []uint8, b1 []uint16, w2c, w2s []uint8, b2 []uint16, hd, in int, roundAct bool, sc *MoEScratch) error {
	d := MoEDims{T: nt, Hd: hd, I: in, E: 1, TopK: 1, RoundAct: roundAct}
	if err := d.check(); err != nil {
		return err
	}
	w := MoEWeights{W1Codes: w1c, W1Scales: w1s, B1: b1, W2Codes: w2c, W2Scales: w2s, B2: b2}
	w.checkLens(d)
	if len(xs) != nt*hd {
		panic(badLenX)
	}
	if len(o) != nt*hd || s != nil && len(s) != nt*hd {
		panic(badLenOut)
	}
	rs := make([]int, nt)
	for i := range rs {
		rs[i] = i
	}
	if sc == nil {
		sc = new(MoEScratch)
	}
	return moeExpert(o, s, rs, 0, xs, w, d, 0, sc)
}

// MoEScratch is MXFP4MoEExpert's reusable decode buffers (the zero value
// is ready; every call overwrites them).
type MoEScratch struct{ w1f, w2f []float32 }

// decoded returns a float32 buffer of n elements in *buf, allocated on
// first use: only the scalar path (fewer than 4 tokens, or no vector
// tiles) decodes W to float32; the tiles decode codes into their panels.
func decoded(buf *[]float32, n int) []float32 {
	if len(*buf) != n {
		*buf = make([]float32, n)
	}
	return *buf
}

// moeExpert runs expert e on the (token, rank) rows rs (indices into ids,
// the chunk starting at row r0) and writes W2 a + b2 into obuf (and, with
// sbuf non-nil, the bound |a| @ |W2|^T + |b2| into sbuf, same rows).
func moeExpert(obuf, sbuf []float64, rs []int, r0 int, x []uint16, w MoEWeights, d MoEDims, e int, sc *MoEScratch) error {
	hd, in := d.Hd, d.I
	nt := len(rs)
	xg := make([]float32, nt*hd)
	for r, i := range rs {
		tok := i / d.TopK
		npy.BF16sToF32s(xg[r*hd:(r+1)*hd], x[tok*hd:(tok+1)*hd])
	}
	w1c := w.W1Codes[e*2*in*hd/2 : (e+1)*2*in*hd/2]
	w1s := w.W1Scales[e*2*in*hd/MXBlock : (e+1)*2*in*hd/MXBlock]
	h := make([]float64, nt*2*in)
	// On the vector tiles W1 and W2 are decoded straight into the GEMM's
	// panels (gemmDecoded's sums); elsewhere dequantized, then multiplied.
	if useTiles(nt, hd, 2*in) {
		tilePanels(h, nil, xg, nt, hd, 2*in, packMXFP4(w1c, w1s, hd))
	} else {
		w1f := decoded(&sc.w1f, 2*in*hd)
		if err := MXFP4Dequantize(w1f, w1c, w1s, 2*in, hd); err != nil {
			return err
		}
		Matmul(h, xg, w1f, nt, hd, 2*in, true)
	}
	a := make([]float64, nt*in)
	b1 := w.B1[e*2*in : (e+1)*2*in]
	for r := range nt {
		hr := h[r*2*in : (r+1)*2*in]
		for i := range in {
			a[r*in+i] = SwiGLU(hr[2*i]+npy.BF16ToF64(b1[2*i]), hr[2*i+1]+npy.BF16ToF64(b1[2*i+1]))
		}
	}
	if d.RoundAct {
		for i, v := range a {
			a[i] = npy.BF16ToF64(npy.BF16FromF64(v))
		}
	}
	w2c := w.W2Codes[e*hd*in/2 : (e+1)*hd*in/2]
	w2s := w.W2Scales[e*hd*in/MXBlock : (e+1)*hd*in/MXBlock]
	o := make([]float64, nt*hd)
	var so []float64
	if useTiles(nt, in, hd) {
		if sbuf != nil {
			so = make([]float64, nt*hd) // |a| @ |W2|^T from the same panels
		}
		tilePanels(o, so, a, nt, in, hd, packMXFP4(w2c, w2s, in))
	} else {
		w2f := decoded(&sc.w2f, hd*in)
		if err := MXFP4Dequantize(w2f, w2c, w2s, hd, in); err != nil {
			return err
		}
		matmul(o, a, w2f, nt, in, hd, true)
	}
	b2 := w.B2[e*hd : (e+1)*hd]
	for r, i := range rs {
		dst := obuf[(i-r0)*hd : (i-r0+1)*hd]
		for c, v := range o[r*hd : (r+1)*hd] {
			dst[c] = v + npy.BF16ToF64(b2[c])
		}
	}
	if sbuf == nil {
		return nil
	}
	if so == nil {
		for i, v := range a {
			a[i] = math.Abs(v)
		}
		w2f := sc.w2f // the scalar path above decoded W2 into it
		wb := f32Bits(w2f)
		for i := range wb {
			wb[i] &= 0x7fffffff
		}
		so = o
		matmul(so, a, w2f, nt, in, hd, true)
	}
	for r, i := range rs {
		dst := sbuf[(i-r0)*hd : (i-r0+1)*hd]
		for c, v := range so[r*hd : (r+1)*hd] {
			dst[c] = v + math.Abs(npy.BF16ToF64(b2[c]))
		}
	}
	return nil
}
