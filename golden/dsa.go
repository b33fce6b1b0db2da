package golden

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/goldset/goldset/internal/cpuslots"
	"github.com/goldset/goldset/internal/dtype"
)

// DSABlockSize is the token count of one index-cache block (page) in
// DeepSeek Sparse Attention: vLLM, DeepGEMM and FlashMLA all use 64.
const DSABlockSize = 64

// dsaAmaxFloor is the amax floor of the index-cache quantizer. vLLM writes
// fmaxf(amax, 1e-4) and DeepGEMM's test amax.clamp(1e-4) on a float32
// tensor, so the floor is 1e-4 rounded to float32.
const dsaAmaxFloor = float32(1e-4)

// DSAScaleFmt is the index-cache scale format (ops.md §8a).
type DSAScaleFmt int

const (
	// DSAScaleUE8M0 rounds the scale up to a power of two (vLLM's
	// scale_fmt "ue8m0", DeepSeek-V3.2's default).
	DSAScaleUE8M0 DSAScaleFmt = iota
	// DSAScaleFP32 keeps the float32 quotient amax/448.
	DSAScaleFP32
)

func (f DSAScaleFmt) check() error {
	if f != DSAScaleUE8M0 && f != DSAScaleFP32 {
		return fmt.Errorf("golden: dsa scale format %d: %w", f, ErrInvalidParams)
	}
	return nil
}

// DSACacheDims are the sizes of a dsa_index_cache case.
//
//	k            [T, DI]               bf16 values (exact in float32)
//	slotMapping  [Ts] int32, Ts <= T   negative: skip
//	cache, dst   [NB, 64*DI + 64*4]    bytes
type DSACacheDims struct {
	T  int // tokens in k
	DI int // index head dimension (128 in DeepSeek-V3.2)
	NB int // blocks in the cache
}

// DSABlockBytes returns the byte size of one index-cache block:
// 64*DI e4m3 codes, then 64 little-endian float32 scales.
func DSABlockBytes(di int) int { return DSABlockSize * (di + 4) }

// DSAIndexScale returns the quantization scale of a key row whose largest
// magnitude is amax: q = fl32(max(amax, fl32(1e-4)) / 448) (a float32
// division, as vLLM's kernel and DeepGEMM's test do), and for ue8m0 the
// smallest power of two >= q, computed exactly (the spec's
// 2^ceil(log2(q))).
func DSAIndexScale(amax float32, f DSAScaleFmt) float32 {
	q := max(amax, dsaAmaxFloor) / 448
	if f == DSAScaleFP32 {
		return q
	}
	fr, e := math.Frexp(float64(q)) // q = fr * 2^e, fr in [0.5, 1)
	if fr == 0.5 {
		return q
	}
	return float32(math.Ldexp(1, e))
}

// DSAIndexCache writes the golden index cache of ops.md §8a: dst receives
// cache with, for every t < len(slotMapping) with s = slotMapping[t] >= 0,
// token s%64 of block s/64 replaced by the quantized row k[t]: sc =
// DSAIndexScale(max_d |k[t,d]|), codes e4m3(RNE, saturating)(fl32(k/sc)) at
// byte o*DI + d of the block, and sc's float32 bits at byte 64*DI + 4*o,
// little-endian. Every other byte is copied from cache unchanged. dst may
// alias cache. Slots >= NB*64 return ErrOutOfRange and duplicate slots
// ErrInvalidParams, before anything is written; a NaN or infinity in a row
// that is written returns ErrInvalidParams (its scale would not be finite).
func DSAIndexCache(dst []byte, k []float32, slotMapping []int32, cache []byte, dims DSACacheDims, f DSAScaleFmt) error {
	if dims.T < 0 || dims.DI <= 0 || dims.NB <= 0 {
		return fmt.Errorf("golden: dsa cache dims %+v: sizes must be positive: %w", dims, ErrInvalidParams)
	}
	if err := f.check(); err != nil {
		return err
	}
	if len(k) != dims.T*dims.DI {
		panic(badLenKV)
	}
	if len(cache) != dims.NB*DSABlockBytes(dims.DI) || len(dst) != len(cache) {
		panic(badLenCache)
	}
	if len(slotMapping) > dims.T {
		panic(badLenSlots)
	}
	if err := checkSlotMapping(slotMapping, dims.NB*DSABlockSize); err != nil {
		return err
	}
	for t, s := range slotMapping {
		if s < 0 {
			continue
		}
		row := k[t*dims.DI : (t+1)*dims.DI]
		if dsaAbsMaxBits(row) < 0x7f800000 {
			continue
		}
		for d, x := range row {
			if x != x || math.IsInf(float64(x), 0) {
				return fmt.Errorf("golden: k[%d, %d] = %g is not finite: %w", t, d, x, ErrInvalidParams)
			}
		}
	}
	copy(dst, cache)
	for t, s := range slotMapping {
		if s < 0 {
			continue
		}
		dsaQuantizeRow(dst, k[t*dims.DI:(t+1)*dims.DI], int(s), dims.DI, f)
	}
	return nil
}

// DSAIndexCacheOneRounding is DSAIndexCache with every code rounded once
// from the exact quotient, e4m3(RNE, saturating)(k/sc) (ops.md §8a read
// literally), where DSAIndexCache rounds fl32(k/sc) as vLLM's kernel
// does. The two differ only where fl32(k/sc) lands on an e4m3 midpoint
// that k/sc is not on: never for ue8m0 (sc is a power of two, k/sc is
// exact), on about one code in a thousand for fp32 scales. It is the
// alternative compare accepts for fp32-scale caches (docs/spec.md §8a).
// The float64 quotient stands for the exact one: k has 8 significant
// bits, sc 24 and an e4m3 midpoint m 5, so k - m*sc is 0 or at least
// 2^-29 of k in magnitude, far above float64's rounding of k/sc.
func DSAIndexCacheOneRounding(dst []byte, k []float32, slotMapping []int32, cache []byte, dims DSACacheDims, f DSAScaleFmt) error {
	if err := DSAIndexCache(dst, k, slotMapping, cache, dims, f); err != nil {
		return err
	}
	for t, s := range slotMapping {
		if s < 0 {
			continue
		}
		codes, sc := DSACacheSlot(dst, int(s), dims.DI)
		for d, x := range k[t*dims.DI : (t+1)*dims.DI] {
			codes[d] = dtype.E4M3FromF64(float64(x) / float64(sc))
		}
	}
	return nil
}

// dsaQuantizeRow writes one quantized key row into its slot.
func dsaQuantizeRow(cache []byte, row []float32, slot, di int, f DSAScaleFmt) {
	sc := DSAIndexScale(math.Float32frombits(dsaAbsMaxBits(row)), f)
	base := (slot / DSABlockSize) * DSABlockBytes(di)
	o := slot % DSABlockSize
	codes := cache[base+o*di : base+(o+1)*di]
	for d := dsaE4M3CodesVec(codes, row, sc); d < len(row); d++ {
		codes[d] = dtype.E4M3FromF32(row[d] / sc) // float32 quotient, then one RNE
	}
	binary.LittleEndian.PutUint32(cache[base+DSABlockSize*di+4*o:], math.Float32bits(sc))
}

// dsaAbsMaxBits returns the largest float32 encoding of |x| over row (0
// for an empty row). Magnitude encodings order as their values, so for a
// finite row it is the bits of max |x|, and it is >= 0x7f800000 exactly
// when the row holds an infinity or a NaN.
func dsaAbsMaxBits(row []float32) uint32 {
	m, done := dsaAbsMaxBitsVec(row)
	for _, x := range row[done:] {
		m = max(m, math.Float32bits(x)&0x7fffffff)
	}
	return m
}

// DSACacheSlot returns the codes and scale of slot s of an index cache.
func DSACacheSlot(cache []byte, s, di int) (codes []byte, scale float32) {
	base := (s / DSABlockSize) * DSABlockBytes(di)
	o := s % DSABlockSize
	return cache[base+o*di : base+(o+1)*di], math.Float32frombits(binary.LittleEndian.Uint32(cache[base+DSABlockSize*di+4*o:]))
}

// dsaRunCodes returns the codes of n consecutive slots from s, in one block.
func dsaRunCodes(cache []byte, s, di, n int) []byte {
	base := (s / DSABlockSize) * DSABlockBytes(di)
	o := s % DSABlockSize
	return cache[base+o*di : base+(o+n)*di]
}

// DSAIndexerDims are the sizes of a paged dsa_indexer decode case (ops.md §8b).
//
//	q           [B, NN, HI, DI]   float8_e4m3fn codes
//	weights     [B, NN, HI]       float32
//	cache       [NB, 64*DI+256]   bytes (DSAIndexCache's layout)
//	blockTable  [B, MAXB]         int32
//	seqLens     [B]               int32, in [NN, MAXB*64]
//	logits      [B, NN, MAXB*64]  float64 (stored as float32)
//	topk*       [B, NN, K]        int32
//	info        [B, NN]
type DSAIndexerDims struct {
	B    int // sequences
	NN   int // query tokens per sequence (next_n: 1, or 2 with one draft token)
	HI   int // index heads (64)
	DI   int // index head dimension (128)
	NB   int // blocks in the cache
	MAXB int // block-table width
	K    int // tokens kept per query row (2048)
}

func (d DSAIndexerDims) check() error {
	if d.B <= 0 || d.NN <= 0 || d.HI <= 0 || d.DI <= 0 || d.NB <= 0 || d.MAXB <= 0 || d.K <= 0 {
		return fmt.Errorf("golden: dsa indexer dims %+v: all sizes must be positive: %w", d, ErrInvalidParams)
	}
	return nil
}

// DSARowInfo is the per-row selection record of ops.md §8b, all float64.
type DSARowInfo struct {
	Visible int     // tokens the row sees
	Kth     float64 // score of the last selected token (the k-th, or the lowest when all are selected)
	Gap     float64 // Kth minus the next score; +Inf when every visible token is selected
	A       float64 // row scale max_s sc[s] * sum_h |w[h]| * max(0, dot[h,s])
}

// dsaIndexerOpts are the deliberate faults of the negative controls; the
// zero value is the golden kernel.
type dsaIndexerOpts struct {
	ignoreCausal    bool // every query row sees all L tokens
	reluAfterWeight bool // max(0, w*dot) instead of w*max(0, dot)
	omitScale       bool // sc[s] left out
}

// dsaChunk is the number of keys scored per matmul call: it bounds the
// scratch to 2048*DI float32 keys and rows*2048 float64 dots per worker.
const dsaChunk = 2048

// DSAIndexer computes the golden paged indexer of ops.md §8b. Query row
// (b, j) sits at position p = L_b - NN + j and sees the tokens s <= p of
// sequence b, token s living in slot block_table[b, s/64]*64 + s%64 of
// cache. For each visible s, with q8 and k8 the e4m3 values and sc[s] the
// slot's float32 scale:
//
//	dot[h,s] = sum_d q8[b,j,h,d] * k8[s,d]          exact in float64 (any order)
//	I[s]     = sc[s] * sum_{h ascending} float64(w[b,j,h] * max(0, dot[h,s]))
//
// logits[b,j,s] = I[s] for s <= p, -Inf otherwise (the caller rounds it to
// float32 once). topkLogical[b,j,:] lists the min(K, p+1) tokens with the
// largest I, by (I descending, position ascending), then -1;
// topkPhysical holds their slots. info gets Visible, Kth, Gap and A. Any
// output may be nil to skip it.
//
// Errors: seq_lens outside [NN, MAXB*64] (ErrContextLen), a block-table
// entry that is read outside [0, NB) (ErrOutOfRange), a NaN score (a NaN
// or NaN-scaled key was read: ErrInvalidParams).
func DSAIndexer(logits []float64, topkLogical, topkPhysical []int32, info []DSARowInfo, q []uint8, weights []float32, cache []byte, blockTable, seqLens []int32, dims DSAIndexerDims) error {
	return dsaIndexer(logits, topkLogical, topkPhysical, info, q, weights, cache, blockTable, seqLens, dims, dsaIndexerOpts{})
}

func (d DSAIndexerDims) checkLens(logits []float64, topkLogical, topkPhysical []int32, info []DSARowInfo, q []uint8, weights []float32, cache []byte, blockTable, seqLens []int32) {
	rows := d.B * d.NN
	if len(q) != rows*d.HI*d.DI {
		panic(badLenQ)
	}
	if len(weights) != rows*d.HI {
		panic("golden: bad length of weights")
	}
	if len(cache) != d.NB*DSABlockBytes(d.DI) {
		panic(badLenCache)
	}
	if len(blockTable) != d.B*d.MAXB {
		panic(badLenBT)
	}
	if len(seqLens) != d.B {
		panic(badLenCL)
	}
	if logits != nil && len(logits) != rows*d.MAXB*DSABlockSize {
		panic(badLenScores)
	}
	if (topkLogical != nil && len(topkLogical) != rows*d.K) || (topkPhysical != nil && len(topkPhysical) != rows*d.K) {
		panic(badLenSel)
	}
	if info != nil && len(info) != rows {
		panic("golden: bad length of info")
	}
}

// checkSeqs validates seq_lens and the block-table entries that are read.
func (d DSAIndexerDims) checkSeqs(blockTable, seqLens []int32) error {
	for b, l32 := range seqLens {
		l := int(l32)
		if l < d.NN || l > d.MAXB*DSABlockSize {
			return fmt.Errorf("golden: seq_lens[%d] = %d not in [next_n = %d, %d]: %w", b, l, d.NN, d.MAXB*DSABlockSize, ErrContextLen)
		}
		for i := range numBlocks(l, DSABlockSize) {
			p := blockTable[b*d.MAXB+i]
			if p < 0 || int(p) >= d.NB {
				return fmt.Errorf("golden: block_table[%d, %d] = %d not in [0, %d): %w", b, i, p, d.NB, ErrOutOfRange)
			}
		}
	}
	return nil
}

// dsaScratch is one worker's scratch space for scoring keys.
type dsaScratch struct {
	qf     []float32 // [rows*HI, DI] query values
	kf     []float32 // [dsaChunk, DI] key values (without the tile kernel)
	dots   []float64 // [rows*HI, dsaChunk]
	scores []float64 // [rows, L] I per row
	abs    []float64 // [rows, L] sum_h |w| max(0, dot) * sc
	order  []dsaEntry
}

// dsaScratchPool recycles workers' scratch (and the chunk workers' dot
// buffers) across indexer calls: the suite calls the indexer once per
// sequence, and fresh memory costs a page fault per 4 KiB.
var dsaScratchPool sync.Pool

// getDSAScratch returns worker w's scratch, taking one from the pool at
// the worker's first unit.
func getDSAScratch(scratch []*dsaScratch, w int) *dsaScratch {
	if scratch[w] == nil {
		if s, ok := dsaScratchPool.Get().(*dsaScratch); ok {
			scratch[w] = s
		} else {
			scratch[w] = new(dsaScratch)
		}
	}
	return scratch[w]
}

func putDSAScratch(scratch []*dsaScratch) {
	for _, s := range scratch {
		if s != nil {
			dsaScratchPool.Put(s)
		}
	}
}

func (s *dsaScratch) grow(rows, hi, di, l int) {
	if len(s.qf) < rows*hi*di {
		s.qf = make([]float32, rows*hi*di)
	}
	if len(s.dots) < rows*hi*dsaChunk {
		s.dots = make([]float64, rows*hi*dsaChunk)
	}
	if len(s.scores) < rows*l {
		s.scores = make([]float64, rows*l)
		s.abs = make([]float64, rows*l)
	}
	if cap(s.order) < l {
		s.order = make([]dsaEntry, 0, l)
	}
}

func dsaIndexer(logits []float64, topkLogical, topkPhysical []int32, info []DSARowInfo, q []uint8, weights []float32, cache []byte, blockTable, seqLens []int32, dims DSAIndexerDims, opts dsaIndexerOpts) error {
	if err := dims.check(); err != nil {
		return err
	}
	dims.checkLens(logits, topkLogical, topkPhysical, info, q, weights, cache, blockTable, seqLens)
	if err := dims.checkSeqs(blockTable, seqLens); err != nil {
		return err
	}
	nn, hi, di := dims.NN, dims.HI, dims.DI
	width := dims.MAXB * DSABlockSize
	workers := numWorkers(dims.B)
	inner := max(1, cpuslots.Procs()/workers) // chunk workers per sequence
	scratch := make([]*dsaScratch, workers)
	defer putDSAScratch(scratch)
	errs := make([]error, dims.B)
	parallelFor(workers, dims.B, func(w, b int) {
		l := int(seqLens[b])
		s := getDSAScratch(scratch, w)
		s.grow(nn, hi, di, l)
		rowQ := q[b*nn*hi*di : (b+1)*nn*hi*di]
		dsaWidenCodes(s.qf[:nn*hi*di], rowQ)
		bt := blockTable[b*dims.MAXB : (b+1)*dims.MAXB]
		slotOf := func(pos int) int { return int(bt[pos/DSABlockSize])*DSABlockSize + pos%DSABlockSize }
		scale := func(pos int) float64 {
			_, sc := DSACacheSlot(cache, slotOf(pos), di)
			return float64(sc)
		}
		dsaScoreKeys(s, l, nn*hi, di, inner, func(pos, n int) []uint8 {
			return dsaRunCodes(cache, slotOf(pos), di, n) // a run within one block: contiguous
		}, func(c0, cn int, dots []float64) {
			for j := range nn {
				wts := weights[(b*nn+j)*hi : (b*nn+j+1)*hi]
				sums := s.scores[j*l+c0 : j*l+c0+cn]
				abs := s.abs[j*l+c0 : j*l+c0+cn]
				dsaHeadSums(sums, abs, wts, dots[j*hi*cn:(j+1)*hi*cn], cn, opts.reluAfterWeight)
				for i := range sums {
					sc := 1.0
					if !opts.omitScale {
						sc = scale(c0 + i)
					}
					sums[i] = float64(sc * sums[i])
					abs[i] = float64(sc * abs[i])
				}
			}
		})
		for j := range nn {
			r := b*nn + j
			vis := l - nn + j + 1
			if opts.ignoreCausal {
				vis = l
			}
			sc := s.scores[j*l : j*l+vis]
			if pos := dsaNaNAt(sc); pos >= 0 {
				errs[b] = fmt.Errorf("golden: dsa indexer: score of sequence %d row %d position %d is NaN (a NaN key, scale, query code or weight was read): %w", b, j, pos, ErrInvalidParams)
				return
			}
			if logits != nil {
				row := logits[r*width : (r+1)*width]
				copy(row, sc)
				for i := vis; i < width; i++ {
					row[i] = math.Inf(-1)
				}
			}
			var tl, tp []int32
			if topkLogical != nil {
				tl = topkLogical[r*dims.K : (r+1)*dims.K]
			}
			if topkPhysical != nil {
				tp = topkPhysical[r*dims.K : (r+1)*dims.K]
			}
			ri := dsaSelect(tl, tp, sc, s.abs[j*l:j*l+vis], dims.K, &s.order, slotOf)
			if info != nil {
				info[r] = ri
			}
		}
	})
	return dsaFirstError(errs)
}

// dsaNaNAt returns the index of the first NaN in x, or -1.
func dsaNaNAt(x []float64) int {
	for i, v := range x {
		if v != v {
			return i
		}
	}
	return -1
}

// dsaFirstError returns the first non-nil error of errs (one per work unit).
func dsaFirstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// dsaWidenCodes writes the float32 values of e4m3 codes (exact).
func dsaWidenCodes(dst []float32, codes []uint8) {
	for i, c := range codes {
		dst[i] = dsaE4M3F32[c]
	}
}

var dsaE4M3F32 = func() (t [256]float32) {
	for c := range t {
		t[c] = float32(dtype.E4M3ToF64(uint8(c)))
	}
	return t
}()

// dsaScoreKeys computes the dots of the rows query rows in s.qf ([rows,
// di]) against keys 0..n-1 in chunks of dsaChunk and calls emit(c0, cn,
// dots) per chunk of keys c0..c0+cn-1 with dots [rows, cn]; run(pos, r)
// returns the codes [r, di] of keys pos..pos+r-1, for runs that stay
// within one DSABlockSize-aligned block (a page's keys are contiguous).
// With the tile kernel the codes go straight into its float64 panels (16
// keys from a multiple of 16: one run); otherwise they are widened to
// float32 for Matmul. Either way each dot is Matmul's sequential d-order
// sum (TestDSAIndexerPathsAgree compares the paths). The dots are also
// exact: e4m3 values are multiples of 2^-9 below 2^9, so each product is a
// multiple of 2^-18 below 2^18, and every partial sum of up to 2^16
// products is a multiple of 2^-18 below 2^34, which float64 holds exactly
// (52 fraction bits span 2^-18..2^34), so any order gives the same bits
// (the naive twin sums in d order and the tests compare bit for bit).
func dsaScoreKeys(s *dsaScratch, n, rows, di, workers int, run func(pos, r int) []uint8, emit func(c0, cn int, dots []float64)) {
	chunks := (n + dsaChunk - 1) / dsaChunk
	workers = max(1, min(workers, chunks))
	if workers == 1 {
		// One goroutine over the chunks; the tiles of each in parallel.
		for c0 := 0; c0 < n; c0 += dsaChunk {
			cn := min(dsaChunk, n-c0)
			dots := s.dots[:rows*cn]
			dsaScoreChunk(s.qf[:rows*di], &s.kf, dots, c0, cn, rows, di, numWorkers((cn+15)/16), run)
			emit(c0, cn, dots)
		}
		return
	}
	// Chunks in parallel, each on one goroutine (a long sequence of few
	// rows: per-chunk fork-join of the tiles would cost more than it
	// gains). Each chunk's dots and sums are the same whoever computes them.
	bufs := make([]*dsaScratch, workers) // taken from dsaScratchPool as workers start
	defer putDSAScratch(bufs)
	parallelFor(workers, chunks, func(w, ci int) {
		b := getDSAScratch(bufs, w)
		if len(b.dots) < rows*dsaChunk {
			b.dots = make([]float64, rows*dsaChunk)
		}
		c0 := ci * dsaChunk
		cn := min(dsaChunk, n-c0)
		dots := b.dots[:rows*cn]
		dsaScoreChunk(s.qf[:rows*di], &b.kf, dots, c0, cn, rows, di, 1, run)
		emit(c0, cn, dots)
	})
}

// dsaScoreChunk computes the dots [rows, cn] of the query rows qf [rows,
// di] with keys c0..c0+cn-1 (on up to workers goroutines with the tile
// kernel; *kf is float32 key scratch for the path without it).
func dsaScoreChunk(qf []float32, kf *[]float32, dots []float64, c0, cn, rows, di, workers int, run func(pos, r int) []uint8) {
	if hasMatmulTile && rows >= 4 && cn >= 16 {
		tilePanelsOn(workers, dots, nil, qf, rows, di, cn, func(panel []float64, j0, cols int) {
			codes := run(c0+j0, cols)
			for c := range cols {
				for p, x := range codes[c*di : (c+1)*di] {
					panel[p*16+c] = float64(dsaE4M3F32[x])
				}
			}
		})
		return
	}
	if len(*kf) < cn*di {
		*kf = make([]float32, dsaChunk*di)
	}
	k := (*kf)[:cn*di]
	for pos := c0; pos < c0+cn; {
		r := min(DSABlockSize-pos%DSABlockSize, c0+cn-pos)
		dsaWidenCodes(k[(pos-c0)*di:(pos-c0+r)*di], run(pos, r))
		pos += r
	}
	Matmul(dots, qf, k, rows, di, cn, true)
}

// dsaHeadSums sets sums[i] = sum_{h ascending} float64(w[h]*max(0, dot[h,i]))
// and abs[i] the same with |w[h]|, for dots [len(w), cn]; reluAfter moves
// the ReLU after the weight (a negative control). Heads run in the outer
// loop for locality; each sum still adds its heads in ascending order.
// The AVX-512 kernel does the keys it can (32 at a time, keys in lanes).
func dsaHeadSums(sums, abs []float64, w []float32, dots []float64, cn int, reluAfter bool) {
	var buf [2 * 64]float64
	wb := buf[:]
	if len(w) > 64 {
		wb = make([]float64, 2*len(w))
	}
	wf, wa := wb[:len(w)], wb[len(w):2*len(w)]
	for h, wv := range w {
		wf[h], wa[h] = float64(wv), math.Abs(float64(wv))
	}
	i0 := 0
	if !reluAfter {
		i0 = dsaHeadSumsVec(sums, abs, wf, wa, dots, cn)
	}
	clear(sums[i0:cn])
	clear(abs[i0:cn])
	for h := range w {
		row := dots[h*cn+i0 : (h+1)*cn]
		s, a := sums[i0:cn], abs[i0:cn]
		s, a = s[:len(row)], a[:len(row)]
		for i, dv := range row {
			r := max(0, dv)
			if reluAfter {
				s[i] += max(0, float64(wf[h]*dv))
			} else {
				s[i] += float64(wf[h] * r)
			}
			a[i] += float64(wa[h] * r)
		}
	}
}

// dsaEntry is one candidate of a top-k row.
type dsaEntry struct {
	score float64
	pos   int32
}

// dsaBefore is the selection order: score descending, position ascending.
// Positions are distinct, so it is a strict total order (scores are never
// NaN here) and the selection is unique.
func dsaBefore(a, b dsaEntry) bool {
	return a.score > b.score || (a.score == b.score && a.pos < b.pos)
}

func dsaCompare(a, b dsaEntry) int {
	if dsaBefore(a, b) {
		return -1
	}
	if dsaBefore(b, a) {
		return 1
	}
	return 0
}

// dsaSelect writes the top-k row of scores (index = position) into tl
// (positions) and tp (slotOf(position)), either of which may be nil, pads
// them with -1 and returns Visible, Kth, Gap and A = max(abs).
func dsaSelect(tl, tp []int32, scores, abs []float64, k int, order *[]dsaEntry, slotOf func(int) int) DSARowInfo {
	v := len(scores)
	ents := (*order)[:0]
	for pos, x := range scores {
		ents = append(ents, dsaEntry{x, int32(pos)})
	}
	*order = ents
	n := min(k, v)
	ri := DSARowInfo{Visible: v, Gap: math.Inf(1)}
	for _, x := range abs {
		ri.A = max(ri.A, x)
	}
	if v > k {
		dsaNthElement(ents, k) // ents[:k] are the k best, ents[k] the next
		next := ents[k]
		for _, e := range ents[k+1:] {
			if dsaBefore(e, next) {
				next = e
			}
		}
		slices.SortFunc(ents[:k], dsaCompare)
		ri.Kth = ents[k-1].score
		ri.Gap = ri.Kth - next.score
	} else {
		slices.SortFunc(ents, dsaCompare)
		if v > 0 {
			ri.Kth = ents[v-1].score
		}
	}
	for i := range k {
		var lp, pp int32 = -1, -1
		if i < n {
			lp = ents[i].pos
			if tp != nil {
				pp = int32(slotOf(int(lp)))
			}
		}
		if tl != nil {
			tl[i] = lp
		}
		if tp != nil {
			tp[i] = pp
		}
	}
	return ri
}

// dsaNthElement reorders e so that e[:k] are its k first entries in
// dsaBefore order (in any order among themselves) and e[k] is the next
// one or later (quickselect, median-of-three pivots, deterministic).
func dsaNthElement(e []dsaEntry, k int) {
	lo, hi := 0, len(e)-1
	for hi > lo {
		mid := lo + (hi-lo)/2
		if dsaBefore(e[mid], e[lo]) {
			e[mid], e[lo] = e[lo], e[mid]
		}
		if dsaBefore(e[hi], e[lo]) {
			e[hi], e[lo] = e[lo], e[hi]
		}
		if dsaBefore(e[hi], e[mid]) {
			e[hi], e[mid] = e[mid], e[hi]
		}
		pivot := e[mid]
		i, j := lo, hi
		for i <= j {
			for dsaBefore(e[i], pivot) {
				i++
			}
			for dsaBefore(pivot, e[j]) {
				j--
			}
			if i <= j {
				e[i], e[j] = e[j], e[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

// DSARaggedDims are the sizes of a ragged (prefill) dsa_indexer case.
//
//	q        [T, HI, DI]   float8_e4m3fn codes
//	weights  [T, HI]       float32
//	kv       [S, DI]       float8_e4m3fn codes
//	kvScale  [S]           float32
//	ks, ke   [T]           int32; row t sees kv rows [ks[t], ke[t])
//	logits   [T, S]        float64 (stored as float32), -Inf outside the row
//	topk     [T, K]        int32 kv-row indices, -1 padded
//	info     [T]
type DSARaggedDims struct {
	T, HI, DI, S, K int
}

// DSAIndexerRagged is DSAIndexer's prefill form (layout "ragged"): row t
// scores kv rows s in [ks[t], ke[t]) with the same arithmetic (sc[s] =
// kvScale[s]) and selects by (I descending, kv row ascending). An empty
// window (ks == ke) gives a row of -1 and Visible 0. ks > ke, or a window
// outside [0, S), returns ErrOutOfRange.
func DSAIndexerRagged(logits []float64, topk []int32, info []DSARowInfo, q []uint8, weights []float32, kv []uint8, kvScale []float32, ks, ke []int32, dims DSARaggedDims) error {
	if dims.T < 0 || dims.HI <= 0 || dims.DI <= 0 || dims.S < 0 || dims.K <= 0 {
		return fmt.Errorf("golden: dsa ragged dims %+v: sizes must be positive: %w", dims, ErrInvalidParams)
	}
	t, hi, di := dims.T, dims.HI, dims.DI
	if len(q) != t*hi*di {
		panic(badLenQ)
	}
	if len(weights) != t*hi {
		panic("golden: bad length of weights")
	}
	if len(kv) != dims.S*di || len(kvScale) != dims.S {
		panic(badLenCache)
	}
	if len(ks) != t || len(ke) != t {
		panic(badLenCL)
	}
	if logits != nil && len(logits) != t*dims.S {
		panic(badLenScores)
	}
	if topk != nil && len(topk) != t*dims.K {
		panic(badLenSel)
	}
	if info != nil && len(info) != t {
		panic("golden: bad length of info")
	}
	for r := range t {
		if ks[r] < 0 || ke[r] < ks[r] || int(ke[r]) > dims.S {
			return fmt.Errorf("golden: row %d window [ks, ke) = [%d, %d) not inside [0, %d): %w", r, ks[r], ke[r], dims.S, ErrOutOfRange)
		}
	}
	workers := numWorkers(t)
	inner := max(1, cpuslots.Procs()/workers) // chunk workers per row
	scratch := make([]*dsaScratch, workers)
	defer putDSAScratch(scratch)
	errs := make([]error, t)
	parallelFor(workers, t, func(w, r int) {
		lo, n := int(ks[r]), int(ke[r]-ks[r])
		s := getDSAScratch(scratch, w)
		s.grow(1, hi, di, n)
		dsaWidenCodes(s.qf[:hi*di], q[r*hi*di:(r+1)*hi*di])
		wts := weights[r*hi : (r+1)*hi]
		dsaScoreKeys(s, n, hi, di, inner, func(pos, n int) []uint8 {
			return kv[(lo+pos)*di : (lo+pos+n)*di]
		}, func(c0, cn int, dots []float64) {
			sums, abs := s.scores[c0:c0+cn], s.abs[c0:c0+cn]
			dsaHeadSums(sums, abs, wts, dots, cn, false)
			for i := range sums {
				sc := float64(kvScale[lo+c0+i])
				sums[i] = float64(sc * sums[i])
				abs[i] = float64(sc * abs[i])
			}
		})
		sc := s.scores[:n]
		if pos := dsaNaNAt(sc); pos >= 0 {
			errs[r] = fmt.Errorf("golden: dsa ragged indexer: score of row %d kv row %d is NaN: %w", r, lo+pos, ErrInvalidParams)
			return
		}
		if logits != nil {
			row := logits[r*dims.S : (r+1)*dims.S]
			for i := range row {
				row[i] = math.Inf(-1)
			}
			copy(row[lo:], sc)
		}
		var tk []int32
		if topk != nil {
			tk = topk[r*dims.K : (r+1)*dims.K]
		}
		ri := dsaSelect(tk, nil, sc, s.abs[:n], dims.K, &s.order, nil)
		for i, x := range tk {
			if x >= 0 {
				tk[i] = x + int32(lo)
			}
		}
		if info != nil {
			info[r] = ri
		}
	})
	return dsaFirstError(errs)
}

// DSACausalPrefillSpans builds the causal chunked-prefill metadata of the
// ragged indexer for a batch whose sequence b has ctxLens[b] tokens already
// cached and queryLens[b] new tokens in this chunk. The kv rows of the
// sequences are concatenated (sequence b's ctxLens[b]+queryLens[b] rows
// start at off_b = sum of the earlier sequences' rows), and new token i of
// sequence b, at position ctxLens[b]+i, sees its own sequence up to itself:
// ks = off_b, ke = off_b + ctxLens[b] + i + 1 (vLLM's cu_seqlen_ks/ke).
// ks and ke must hold sum(queryLens) entries; it returns S, the kv row
// count.
func DSACausalPrefillSpans(ks, ke []int32, ctxLens, queryLens []int32) (int, error) {
	if len(ctxLens) != len(queryLens) {
		panic(badLenCL)
	}
	var t, s int64
	for b := range ctxLens {
		if ctxLens[b] < 0 || queryLens[b] < 0 {
			return 0, fmt.Errorf("golden: sequence %d: ctx_len %d, query_len %d must be >= 0: %w", b, ctxLens[b], queryLens[b], ErrInvalidParams)
		}
		t += int64(queryLens[b])
		s += int64(ctxLens[b]) + int64(queryLens[b])
	}
	if s > math.MaxInt32 {
		return 0, fmt.Errorf("golden: %d kv rows overflow int32: %w", s, ErrInvalidParams)
	}
	if int64(len(ks)) != t || int64(len(ke)) != t {
		panic(badLenSel)
	}
	r, off := 0, int32(0)
	for b := range ctxLens {
		for i := range queryLens[b] {
			ks[r] = off
			ke[r] = off + ctxLens[b] + i + 1
			r++
		}
		off += ctxLens[b] + queryLens[b]
	}
	return int(s), nil
}

// DSABlockHeader writes the block_header [NB, 2] of ops.md §8d: for each
// physical block, (valid tokens, logical start position) of its first
// reference in (sequence, position) order, where logical block i of
// sequence b (i < ceil(L_b/ps)) holds min(ps, L_b - i*ps) valid tokens from
// position i*ps; an unreferenced block is (0, -1). Block-table entries that
// are read must lie in [0, NB) (ErrOutOfRange); seq_lens in [0, MAXB*ps]
// (ErrContextLen).
func DSABlockHeader(dst []int32, blockTable, seqLens []int32, b, maxb, nb, ps int) error {
	if b <= 0 || maxb <= 0 || nb <= 0 || ps <= 0 {
		return fmt.Errorf("golden: block header sizes B=%d MAXB=%d NB=%d ps=%d must be positive: %w", b, maxb, nb, ps, ErrInvalidParams)
	}
	if len(dst) != 2*nb {
		panic(badLenDst)
	}
	if len(blockTable) != b*maxb {
		panic(badLenBT)
	}
	if len(seqLens) != b {
		panic(badLenCL)
	}
	for s, l := range seqLens {
		if l < 0 || int(l) > maxb*ps {
			return fmt.Errorf("golden: seq_lens[%d] = %d not in [0, %d]: %w", s, l, maxb*ps, ErrContextLen)
		}
		for i := range numBlocks(int(l), ps) {
			if p := blockTable[s*maxb+i]; p < 0 || int(p) >= nb {
				return fmt.Errorf("golden: block_table[%d, %d] = %d not in [0, %d): %w", s, i, p, nb, ErrOutOfRange)
			}
		}
	}
	for p := range nb {
		dst[2*p], dst[2*p+1] = 0, -1
	}
	for s, l := range seqLens {
		for i := range numBlocks(int(l), ps) {
			p := blockTable[s*maxb+i]
			if dst[2*p+1] >= 0 {
				continue // a shared block keeps its first reference
			}
			dst[2*p] = int32(min(ps, int(l)-i*ps))
			dst[2*p+1] = int32(i * ps)
		}
	}
	return nil
}
