package golden

import (
	"fmt"
	"math"
	"slices"

	"github.com/goldset/goldset/internal/detmath"
)

// DSAAttentionDims are the sizes of a dsa_sparse_attention case (ops.md
// §8c): MLA in MQA form, one latent KV head shared by all query heads.
//
//	qNope     [T, H, DC]   bf16 values (exact in float32)
//	qPe       [T, H, DR]
//	ckv       [P, PS, DC]  latent cache: the keys' first DC dims and the values
//	kpe       [P, PS, DR]  rope part of the keys
//	indices   [T, K]       int32 physical slots (page*PS + offset), -1 padding anywhere
//	out       [T, H, DC]   float64 (stored as bf16, and float32 as the truth)
//	lse       [T, H]       float64 natural log (stored as float32)
type DSAAttentionDims struct {
	T  int // query rows (decode: one per query token)
	H  int // query heads (16 per TP-8 rank, 128 whole)
	DC int // latent dimension (512)
	DR int // rope dimension (64)
	P  int // pages
	PS int // tokens per page (64)
	K  int // index slots per row (2048)
}

// DSADefaultSMScale is the softmax scale of DeepSeek-V3.2's MLA: the
// pre-absorption head dimension 128 + 64 (FlashInfer-Bench's dsa
// definitions), not the absorbed 576.
var DSADefaultSMScale = 1 / math.Sqrt(192)

func (d DSAAttentionDims) check() error {
	if d.T < 0 || d.H <= 0 || d.DC <= 0 || d.DR < 0 || d.P <= 0 || d.PS <= 0 || d.K <= 0 {
		return fmt.Errorf("golden: dsa attention dims %+v: sizes must be positive: %w", d, ErrInvalidParams)
	}
	return nil
}

type dsaAttnOpts struct {
	minusOneAsSlot0 bool // -1 read as slot 0 (negative control)
	lseBase2        bool // lse / ln 2 (negative control)
}

// DSASparseAttention computes the golden MLA attention over the selected
// slots of ops.md §8c. For row t and head h, over the distinct valid slots
// s of indices[t] taken in ascending slot order (so the result is the same
// for any order of the row):
//
//	dn_s  = sum_d qNope[t,h,d] * ckv_s[d]         d order, exact products
//	dp_s  = sum_d qPe[t,h,d]   * kpe_s[d]
//	x_s   = smScale * (dn_s + dp_s)
//	m     = max_s x_s,  p_s = exp(x_s - m),  den = sum_s p_s
//	out_d = (sum_s float64(p_s * ckv_s[d])) / den,   lse = m + log(den)
//
// A row without a valid slot gives out 0 and lse -Inf (FlashMLA's
// reference writes +Inf there). With one valid slot out is that slot's ckv
// row bit for bit. Only selected slots are read, so NaN canaries elsewhere
// never show. -1 is padding; any other negative index, an index >= P*PS
// (ErrOutOfRange) or a repeated slot in a row (ErrInvalidParams) is an
// error, returned before anything is written.
func DSASparseAttention(out, lse []float64, qNope, qPe, ckv, kpe []float32, indices []int32, dims DSAAttentionDims, smScale float64) error {
	return dsaSparseAttention(out, lse, qNope, qPe, ckv, kpe, indices, dims, smScale, dsaAttnOpts{})
}

func dsaSparseAttention(out, lse []float64, qNope, qPe, ckv, kpe []float32, indices []int32, dims DSAAttentionDims, smScale float64, opts dsaAttnOpts) error {
	if err := dims.check(); err != nil {
		return err
	}
	t, h, dc, dr := dims.T, dims.H, dims.DC, dims.DR
	if len(qNope) != t*h*dc || len(qPe) != t*h*dr {
		panic(badLenQ)
	}
	slots := dims.P * dims.PS
	if len(ckv) != slots*dc || len(kpe) != slots*dr {
		panic(badLenCache)
	}
	if len(indices) != t*dims.K {
		panic(badLenSel)
	}
	if len(out) != t*h*dc {
		panic(badLenOut)
	}
	if len(lse) != t*h {
		panic(badLenLSE)
	}
	if !(smScale > 0) || math.IsInf(smScale, 1) {
		return fmt.Errorf("golden: sm_scale %g must be positive and finite: %w", smScale, ErrInvalidParams)
	}
	seen := make(map[int32]struct{})
	for r := range t {
		clear(seen)
		for i, x := range indices[r*dims.K : (r+1)*dims.K] {
			if x == -1 && opts.minusOneAsSlot0 {
				continue
			}
			if x == -1 {
				continue
			}
			if x < 0 || int(x) >= slots {
				return fmt.Errorf("golden: sparse_indices[%d, %d] = %d not -1 or in [0, %d): %w", r, i, x, slots, ErrOutOfRange)
			}
			if _, dup := seen[x]; dup {
				return fmt.Errorf("golden: sparse_indices[%d, %d] = %d repeats a slot of the row: %w", r, i, x, ErrInvalidParams)
			}
			seen[x] = struct{}{}
		}
	}
	type scratch struct {
		sel    []int32
		kc, kp []float32
		dn, dp []float64
		den    []float64
		qn, qp []float32
	}
	workers := numWorkers(t)
	ws := make([]scratch, workers)
	parallelFor(workers, t, func(w, r int) {
		s := &ws[w]
		s.sel = s.sel[:0]
		for _, x := range indices[r*dims.K : (r+1)*dims.K] {
			if x >= 0 {
				s.sel = append(s.sel, x)
			} else if opts.minusOneAsSlot0 {
				s.sel = append(s.sel, 0)
			}
		}
		slices.Sort(s.sel)
		n := len(s.sel)
		o := out[r*h*dc : (r+1)*h*dc]
		l := lse[r*h : (r+1)*h]
		if n == 0 {
			clear(o)
			for i := range l {
				l[i] = math.Inf(-1)
			}
			return
		}
		if cap(s.kc) < n*dc {
			s.kc = make([]float32, n*dc)
			s.kp = make([]float32, n*dr)
		}
		if cap(s.dn) < h*n {
			s.dn = make([]float64, h*n)
			s.dp = make([]float64, h*n)
		}
		if s.den == nil {
			s.den = make([]float64, h)
		}
		kc, kp := s.kc[:n*dc], s.kp[:n*dr]
		for i, x := range s.sel {
			copy(kc[i*dc:(i+1)*dc], ckv[int(x)*dc:(int(x)+1)*dc])
			copy(kp[i*dr:(i+1)*dr], kpe[int(x)*dr:(int(x)+1)*dr])
		}
		// Matmul sums each dot in d order: the bits of the sequential loop.
		dn, dp := s.dn[:h*n], s.dp[:h*n]
		Matmul(dn, qNope[r*h*dc:(r+1)*h*dc], kc, h, dc, n, true)
		Matmul(dp, qPe[r*h*dr:(r+1)*h*dr], kp, h, dr, n, true)
		for hh := range h {
			x := dn[hh*n : (hh+1)*n]
			m := math.Inf(-1)
			for i := range x {
				x[i] = float64(smScale * (x[i] + dp[hh*n+i]))
				m = max(m, x[i])
			}
			var den float64
			for i := range x {
				x[i] = detmath.Exp(x[i] - m) // p_i, in place
				den += x[i]
			}
			s.den[hh] = den
			l[hh] = m + detmath.Log(den)
			if opts.lseBase2 {
				l[hh] /= math.Ln2
			}
		}
		// out[h, d] = sum_{i ascending} float64(p[h,i] * ckv_i[d]): a matmul
		// of the float64 p [h, n] and the float32 slots [n, dc], each element
		// summed in i order (Matmul's bits), then divided by its head's den.
		matmul(o, dn, kc, h, n, dc, false)
		for hh := range h {
			oh := o[hh*dc : (hh+1)*dc]
			for d := range oh {
				oh[d] /= s.den[hh]
			}
		}
	})
	return nil
}
