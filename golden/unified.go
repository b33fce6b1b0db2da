package golden

import (
	"fmt"
	"slices"
)

// UnifiedDims are the sizes of a unified (mixed-batch) attention case, in
// vLLM V1's unified_attention layout (docs/spec.md §12):
//
//	query          [T, Hq, D]       num_tokens rows, padded tokens included
//	keyCache/valueCache [NB, BS, Hkv, D]
//	blockTable     [S, MAXB]        num_seqs rows, padded requests included
//	seqLens        [S]
//	queryStartLoc  [S+1]
//	out            [T, Hq, D], lse [T, Hq]
type UnifiedDims struct {
	T    int // num_tokens: query rows, graph padding included
	S    int // num_seqs: sequences, zero-length padded requests included
	Hq   int // query heads
	Hkv  int // key/value heads; Hq must be a multiple of Hkv
	D    int // head dimension
	NB   int // physical blocks in the cache
	BS   int // tokens per block
	MAXB int // block-table width
}

// attn returns the paged-attention dims whose rows are the T query tokens.
func (d UnifiedDims) attn() AttentionDims {
	return AttentionDims{B: d.T, Hq: d.Hq, Hkv: d.Hkv, D: d.D, NB: d.NB, BS: d.BS, MAXB: d.MAXB}
}

func (d UnifiedDims) check() error {
	if d.S <= 0 {
		return fmt.Errorf("golden: dims %+v: all sizes must be positive: %w", d, ErrInvalidParams)
	}
	return d.attn().check()
}

// UnifiedBug selects a deliberately wrong variant of UnifiedAttention
// (UnifiedAttentionNegative): the typical mistakes of a mixed-batch kernel.
type UnifiedBug uint8

// The wrong variants (docs/spec.md §12, controls).
const (
	// CausalOffByOne: query token i also attends key ctx+i+1 (the causal
	// test is <= where it should be <), clipped at the sequence length.
	CausalOffByOne UnifiedBug = iota + 1
	// PrefixIgnored: the causal mask forgets the cached prefix, query token
	// i attends keys 0..i as in a fresh prefill.
	PrefixIgnored
	// WrongStart: the sequence of a token is found with qsl[s] < t instead
	// of <=, so the first token of each sequence after the first is
	// attended as the (one-past-the-end) token of the sequence before.
	WrongStart
	// WrongGQA: query head h reads KV head h % Hkv instead of h / G.
	WrongGQA
	// PadAsTokens: the last non-empty sequence's query length is taken as
	// T - queryStartLoc[s] (the graph padding counted as its queries), so
	// its context length ctx = L - q_len shrinks and its real tokens attend
	// too few keys.
	PadAsTokens
)

// UnifiedAttention computes causal GQA attention for a mixed batch of
// sequences in float64 (vLLM V1's unified_attention, docs/spec.md §12).
//
// Sequence s owns the query tokens queryStartLoc[s] <= t <
// queryStartLoc[s+1]; with q_len Q = queryStartLoc[s+1]-queryStartLoc[s]
// and L = seqLens[s] (the cache already holds all L tokens, the Q new ones
// last), its context length is ctx = L - Q and query token i (t =
// queryStartLoc[s]+i) attends keys 0..ctx+i. That row is exactly
// PagedAttention's decode row with context length ctx+i+1 over the
// sequence's block-table row: the same arithmetic, the same bits. Q = 1
// is a decode row, Q = 2..4 a speculative verify, a longer Q a prefill
// chunk. Rows with Q = 0 (vLLM's zero-length padded requests, L usually
// 0) read nothing. Tokens t >= queryStartLoc[S] belong to no sequence
// (vLLM's graph padding): their out and lse are 0 and not part of the
// result, and their query rows are not read.
//
// Requirements (else ErrInvalidParams, ErrContextLen, ErrOutOfRange):
// queryStartLoc[0] = 0, non-decreasing, queryStartLoc[S] <= T; 0 <= L <=
// MAXB*BS and L >= Q; block-table entries below ceil(L/BS) of every
// sequence with Q > 0 in [0, NB). Nothing else is read: entries past
// ceil(L/BS), rows of zero-length sequences and the cache slots past L
// may hold anything (NaN, -1).
func UnifiedAttention(out, lse []float64, query, keyCache, valueCache []float32, blockTable, seqLens, queryStartLoc []int32, dims UnifiedDims, scale float64) error {
	return unifiedAttention(out, lse, query, f32View(keyCache), f32View(valueCache), blockTable, seqLens, queryStartLoc, dims, scale, 0)
}

// UnifiedAttentionHalf is UnifiedAttention with the caches given as
// float16 or bfloat16 bits (ht), widened exactly as they are read
// (bit-identical to UnifiedAttention on the widened caches).
func UnifiedAttentionHalf(out, lse []float64, query []float32, keyCache, valueCache []uint16, ht HalfType, blockTable, seqLens, queryStartLoc []int32, dims UnifiedDims, scale float64) error {
	return unifiedAttention(out, lse, query, halfView(keyCache, ht), halfView(valueCache, ht), blockTable, seqLens, queryStartLoc, dims, scale, 0)
}

// UnifiedAttentionNegative is UnifiedAttention with the mistake bug (a
// negative control, docs/spec.md §6 and §12). Validation is the golden's.
func UnifiedAttentionNegative(out, lse []float64, query, keyCache, valueCache []float32, blockTable, seqLens, queryStartLoc []int32, dims UnifiedDims, scale float64, bug UnifiedBug) error {
	if bug < CausalOffByOne || bug > PadAsTokens {
		return fmt.Errorf("golden: unknown UnifiedBug %d: %w", bug, ErrInvalidParams)
	}
	return unifiedAttention(out, lse, query, f32View(keyCache), f32View(valueCache), blockTable, seqLens, queryStartLoc, dims, scale, bug)
}

// UnifiedAttentionF32 is UnifiedAttention computed like PagedAttentionF32
// (float32 dot products, online softmax over blocks, float32
// accumulation): an honest low-precision kernel that must pass.
func UnifiedAttentionF32(out, lse []float64, query, keyCache, valueCache []float32, blockTable, seqLens, queryStartLoc []int32, dims UnifiedDims, scale float64) error {
	rows, err := unifiedRows(query, keyCache, valueCache, out, lse, blockTable, seqLens, queryStartLoc, dims, 0)
	if err != nil {
		return err
	}
	clear(out)
	clear(lse)
	ad := dims.attn()
	parallelFor(numWorkers(len(rows)*dims.Hq), len(rows)*dims.Hq, func(_, u int) {
		r, h := rows[u/dims.Hq], u%dims.Hq
		bt := blockTable[r.seq*dims.MAXB : (r.seq+1)*dims.MAXB]
		blocks := make([]int, numBlocks(r.l, dims.BS))
		for i := range blocks {
			blocks[i] = i
		}
		// attendF32 indexes q, out and lse by its row b and the block table
		// and lengths by b too: hand it one-row views.
		one := AttentionDims{B: 1, Hq: ad.Hq, Hkv: ad.Hkv, D: ad.D, NB: ad.NB, BS: ad.BS, MAXB: ad.MAXB}
		hd := dims.Hq * dims.D
		attendF32(out[r.t*hd:(r.t+1)*hd], lse[r.t*dims.Hq:(r.t+1)*dims.Hq], query[r.t*hd:(r.t+1)*hd], keyCache, valueCache,
			bt, []int32{int32(r.l)}, one, 0, h, blocks, scale)
	})
	return nil
}

// unifiedRow is one query token's attention: token t of sequence seq
// attends keys 0..l-1 of it.
type unifiedRow struct{ t, seq, l int }

// unifiedRows validates a case and returns the attention row of every
// token that belongs to a sequence, as bug computes them.
func unifiedRows(q []float32, nk, nv any, out, lse []float64, bt, sl, qsl []int32, dims UnifiedDims, bug UnifiedBug) ([]unifiedRow, error) {
	if err := dims.check(); err != nil {
		return nil, err
	}
	kl, vl := cacheLen(nk), cacheLen(nv)
	if len(q) != dims.T*dims.Hq*dims.D {
		panic(badLenQ)
	}
	if n := dims.NB * dims.BS * dims.Hkv * dims.D; kl != n || vl != n {
		panic(badLenCache)
	}
	if len(bt) != dims.S*dims.MAXB {
		panic(badLenBT)
	}
	if len(sl) != dims.S {
		panic(badLenCL)
	}
	if len(qsl) != dims.S+1 {
		panic(badLenQSL)
	}
	if len(out) != dims.T*dims.Hq*dims.D {
		panic(badLenOut)
	}
	if len(lse) != dims.T*dims.Hq {
		panic(badLenLSE)
	}
	if qsl[0] != 0 {
		return nil, fmt.Errorf("golden: query_start_loc[0] = %d, want 0: %w", qsl[0], ErrInvalidParams)
	}
	for s := range dims.S {
		if qsl[s+1] < qsl[s] {
			return nil, fmt.Errorf("golden: query_start_loc decreases at %d (%d < %d): %w", s+1, qsl[s+1], qsl[s], ErrInvalidParams)
		}
	}
	if int(qsl[dims.S]) > dims.T {
		return nil, fmt.Errorf("golden: query_start_loc[%d] = %d exceeds num_tokens %d: %w", dims.S, qsl[dims.S], dims.T, ErrInvalidParams)
	}
	last := -1 // the last sequence with Q > 0
	for s := range dims.S {
		L, Q := int(sl[s]), int(qsl[s+1]-qsl[s])
		if L < 0 || L > dims.MAXB*dims.BS {
			return nil, fmt.Errorf("golden: seq_lens[%d] = %d not in [0, %d]: %w", s, L, dims.MAXB*dims.BS, ErrContextLen)
		}
		if Q == 0 {
			continue
		}
		last = s
		if L < Q {
			return nil, fmt.Errorf("golden: seq_lens[%d] = %d is shorter than its %d query tokens: %w", s, L, Q, ErrContextLen)
		}
		for i := range numBlocks(L, dims.BS) {
			if p := bt[s*dims.MAXB+i]; p < 0 || int(p) >= dims.NB {
				return nil, fmt.Errorf("golden: block_table[%d, %d] = %d not in [0, %d): %w", s, i, p, dims.NB, ErrOutOfRange)
			}
		}
	}
	rows := make([]unifiedRow, 0, qsl[dims.S])
	for s := range dims.S {
		L, Q := int(sl[s]), int(qsl[s+1]-qsl[s])
		if bug == PadAsTokens && s == last {
			Q = dims.T - int(qsl[s])
		}
		ctx := max(0, L-Q)
		for t := int(qsl[s]); t < int(qsl[s+1]); t++ {
			i := t - int(qsl[s])
			r := unifiedRow{t: t, seq: s, l: min(L, ctx+i+1)}
			switch bug {
			case CausalOffByOne:
				r.l = min(L, ctx+i+2)
			case PrefixIgnored:
				r.l = min(L, i+1)
			case WrongStart:
				// the last sequence s' with qsl[s'] < t (the first token of
				// a sequence goes to a non-empty one before it)
				if p := prevSeq(qsl, t); p >= 0 && p != s {
					r.seq, r.l = p, int(sl[p])
				}
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// prevSeq returns the last sequence s with queryStartLoc[s] < t and a
// query token, or -1.
func prevSeq(qsl []int32, t int) int {
	s, _ := slices.BinarySearch(qsl, int32(t)) // first s with qsl[s] >= t
	for s--; s >= 0; s-- {
		if qsl[s+1] > qsl[s] {
			return s
		}
	}
	return -1
}

func cacheLen(c any) int {
	switch c := c.(type) {
	case kvView:
		return c.len()
	case []float32:
		return len(c)
	}
	panic("golden: cacheLen")
}

func unifiedAttention(out, lse []float64, q []float32, kCache, vCache kvView, bt, sl, qsl []int32, dims UnifiedDims, scale float64, bug UnifiedBug) error {
	rows, err := unifiedRows(q, kCache, vCache, out, lse, bt, sl, qsl, dims, bug)
	if err != nil {
		return err
	}
	// Padded tokens (and, for the negatives, nothing else) keep zeros.
	clear(out)
	clear(lse)
	ad := dims.attn()
	o := attnOpts{wrongGQA: bug == WrongGQA}
	workers := numWorkers(len(rows))
	scratch := make([]attnScratch, workers)
	// One unit per query token, all heads at once (PagedAttention's unit).
	parallelFor(workers, len(rows), func(w, u int) {
		r := rows[u]
		ws := &scratch[w]
		ws.setHeads(ad, o)
		ws.logical = ws.logical[:0]
		for i := range numBlocks(r.l, ad.BS) {
			ws.logical = append(ws.logical, i)
		}
		attend(ws, out, lse, q, ws.fromCache(kCache, vCache, bt[r.seq*ad.MAXB:(r.seq+1)*ad.MAXB], ad), r.l, ad, r.t, scale, false)
	})
	return nil
}
