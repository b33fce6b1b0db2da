package golden

import "math"

// matmulColBlock is the number of output columns one work unit computes.
const matmulColBlock = 256

// Matmul computes dst = A @ B (docs/spec.md §1) in float64.
//
// a is [m, k]; b is [k, n], or [n, k] when bNK is true (nn.Linear weights);
// dst is [m, n]. Every dst element is the float64 sum over p = 0..k-1, in
// that order, of float64(a[i,p]) * float64(b[p,j]); the products are exact
// (float32 x float32 fits in float64), so the only rounding is that of the
// sequential additions. Both layouts give identical bits.
func Matmul(dst []float64, a, b []float32, m, k, n int, bNK bool) {
	checkMatmul(dst, a, b, m, k, n)
	matmul(dst, a, b, m, k, n, bNK)
}

// matmul is Matmul for A in float32 or float64 (MXFP4MoE's activations,
// the softmax weights of DSASparseAttention): float64(a*b) is then the
// product rounded once, the same in every kernel, so both A types share
// the tile and scalar paths and their bits. The caller checks the lengths.
func matmul[A float32 | float64](dst []float64, a []A, b []float32, m, k, n int, bNK bool) {
	if m == 0 || n == 0 {
		return
	}
	if useTiles(m, k, n) {
		tilePanelsBlock(numWorkers((n+15)/16), matmulABlockLarge, dst, nil, a, m, k, n, packF32(b, k, n, bNK))
		return
	}
	forMatmulUnits(m, n, func(scratch *[]float64, i0, rows, j0, j1 int) {
		if bNK {
			matmulNK(dst, a, b, nkScratch(scratch, k), i0, rows, j0, j1, k, n)
		} else {
			matmulKN(dst, a, b, i0, rows, j0, j1, k, n)
		}
	})
}

// useTiles reports whether an m x k x n product takes the vector tiles:
// at fewer than 4 rows, packing B costs more than the tiles save.
func useTiles(m, k, n int) bool { return hasMatmulTile && m >= 4 && n >= 16 && k > 0 }

// forMatmulUnits runs body over the independent units of an m x n product
// (two rows by matmulColBlock columns) in parallel; scratch is the calling
// worker's own buffer (see nkScratch).
func forMatmulUnits(m, n int, body func(scratch *[]float64, i0, rows, j0, j1 int)) {
	rowPairs := (m + 1) / 2
	colBlocks := (n + matmulColBlock - 1) / matmulColBlock
	units := rowPairs * colBlocks
	workers := numWorkers(units)
	scratch := make([][]float64, workers)
	parallelFor(workers, units, func(w, u int) {
		i0 := 2 * (u / colBlocks)
		j0 := (u % colBlocks) * matmulColBlock
		body(&scratch[w], i0, min(2, m-i0), j0, min(j0+matmulColBlock, n))
	})
}

// nkScratch is matmulNK's 2*k row buffer, made on a worker's first unit.
func nkScratch(s *[]float64, k int) []float64 {
	if *s == nil {
		*s = make([]float64, 2*k)
	}
	return *s
}

func checkMatmul[A float32 | float64](dst []float64, a []A, b []float32, m, k, n int) {
	if m < 0 || k < 0 || n < 0 {
		panic(badDims)
	}
	if len(dst) != m*n {
		panic(badLenDst)
	}
	if len(a) != m*k {
		panic(badLenA)
	}
	if len(b) != k*n {
		panic(badLenB)
	}
}

// matmulKN accumulates rows i0..i0+rows-1, columns j0..j1-1 as axpy updates
// over p, so each element's additions run in p order.
func matmulKN[A float32 | float64](dst []float64, a []A, b []float32, i0, rows, j0, j1, k, n int) {
	c0 := dst[i0*n+j0 : i0*n+j1]
	clear(c0)
	if rows == 2 {
		c1 := dst[(i0+1)*n+j0 : (i0+1)*n+j1]
		c1 = c1[:len(c0)]
		clear(c1)
		for p := range k {
			a0 := float64(a[i0*k+p])
			a1 := float64(a[(i0+1)*k+p])
			br := b[p*n+j0 : p*n+j1]
			br = br[:len(c0)]
			for j, bv := range br {
				x := float64(bv)
				c0[j] += float64(a0 * x)
				c1[j] += float64(a1 * x)
			}
		}
		return
	}
	for p := range k {
		a0 := float64(a[i0*k+p])
		br := b[p*n+j0 : p*n+j1]
		br = br[:len(c0)]
		for j, bv := range br {
			c0[j] += float64(a0 * float64(bv))
		}
	}
}

// matmulNK computes the same sums with b stored [n, k]: four columns at a
// time keep eight independent accumulation chains per row pair, each still
// summing in p order. a may hold float64 values (MXFP4MoE's activations):
// float64(a*b) is then the product rounded once, the same in every chain.
func matmulNK[A float32 | float64](dst []float64, a []A, b []float32, scratch []float64, i0, rows, j0, j1, k, n int) {
	a0 := scratch[:k]
	a1 := scratch[k : 2*k]
	for p := range k {
		a0[p] = float64(a[i0*k+p])
	}
	if rows == 2 {
		for p := range k {
			a1[p] = float64(a[(i0+1)*k+p])
		}
	}
	j := j0
	for ; j+4 <= j1; j += 4 {
		b0 := b[j*k : (j+1)*k]
		b1 := b[(j+1)*k : (j+2)*k]
		b2 := b[(j+2)*k : (j+3)*k]
		b3 := b[(j+3)*k : (j+4)*k]
		b1, b2, b3 = b1[:len(b0)], b2[:len(b0)], b3[:len(b0)]
		x0 := a0[:len(b0)]
		if rows == 2 {
			x1 := a1[:len(b0)]
			var s00, s01, s02, s03, s10, s11, s12, s13 float64
			for p, v0 := range b0 {
				v0, v1, v2, v3 := float64(v0), float64(b1[p]), float64(b2[p]), float64(b3[p])
				u0, u1 := x0[p], x1[p]
				s00 += float64(u0 * v0)
				s01 += float64(u0 * v1)
				s02 += float64(u0 * v2)
				s03 += float64(u0 * v3)
				s10 += float64(u1 * v0)
				s11 += float64(u1 * v1)
				s12 += float64(u1 * v2)
				s13 += float64(u1 * v3)
			}
			dst[i0*n+j], dst[i0*n+j+1], dst[i0*n+j+2], dst[i0*n+j+3] = s00, s01, s02, s03
			dst[(i0+1)*n+j], dst[(i0+1)*n+j+1], dst[(i0+1)*n+j+2], dst[(i0+1)*n+j+3] = s10, s11, s12, s13
			continue
		}
		var s0, s1, s2, s3 float64
		for p, v0 := range b0 {
			u := x0[p]
			s0 += float64(u * float64(v0))
			s1 += float64(u * float64(b1[p]))
			s2 += float64(u * float64(b2[p]))
			s3 += float64(u * float64(b3[p]))
		}
		dst[i0*n+j], dst[i0*n+j+1], dst[i0*n+j+2], dst[i0*n+j+3] = s0, s1, s2, s3
	}
	for ; j < j1; j++ {
		bj := b[j*k : (j+1)*k]
		for r := range rows {
			x := a0
			if r == 1 {
				x = a1
			}
			x = x[:len(bj)]
			var s float64
			for p, v := range bj {
				s += float64(x[p] * float64(v))
			}
			dst[(i0+r)*n+j] = s
		}
	}
}

// matmulABlock bounds, in elements, the float64 copy of float32 A rows
// that tilePanels converts once and every panel then reads (1 MiB: it
// stays in a core's L2 while the panels pass over it).
const matmulABlock = 1 << 17

// matmulABlockLarge is Matmul's bound (8 MiB): every block of A rows packs
// all of B again, and at k = 4096 a 1 MiB block is 32 rows, so a 4096^3
// product re-read B (64 MiB, from DRAM) 128 times and spent more time
// packing than multiplying; 8 MiB blocks cut that 8x (4096^3 NK on 2
// busy cores: 1.2-2.7 s -> 0.76-1.37 s a product). The
// other callers (DSA indexer chunks, MXFP4 GEMMs) call it per chunk or per
// expert, where a larger block would only allocate more per call.
const matmulABlockLarge = 1 << 20

// packBlock is the number of values of k packF32 moves per block of an
// [n, k] B.
const packBlock = 64

// packF32 packs float32 B ([k, n], or [n, k] when bNK) for tilePanels.
func packF32(b []float32, k, n int, bNK bool) func(panel []float64, j0, cols int) {
	return func(panel []float64, j0, cols int) {
		if bNK {
			// Blocks of packBlock values of k: the panel rows they fill
			// (8 KiB) stay in L1 while the 16 rows of B pass over them,
			// where whole rows would scatter each row's stores over the
			// whole panel (16 passes over k*128 bytes).
			for p0 := 0; p0 < k; p0 += packBlock {
				p1 := min(k, p0+packBlock)
				dst := panel[p0*16 : p1*16]
				for c := range cols {
					row := b[(j0+c)*k+p0 : (j0+c)*k+p1]
					for i, v := range row {
						dst[i*16+c] = float64(v)
					}
				}
			}
			return
		}
		for p := range k {
			for c, v := range b[p*n+j0 : p*n+j0+cols] {
				panel[p*16+c] = float64(v)
			}
		}
	}
}

// tilePanels computes dst [m, n] = a [m, k] @ B for a B that pack writes
// 16 columns at a time: pack(panel, j0, cols) fills panel[p*16+c] with
// B[p, j0+c] for every p and c < cols <= 16 (the rest of the panel is
// zero): from float32 B in either layout (packF32), straight from MXFP4
// codes (packMXFP4) or from e4m3 key codes (the DSA indexer). Every 4 rows
// of A in float64 meet the panel in a 4x16 tile kernel, each output a
// sequential float64 sum in p order, as in the scalar kernels (same bits:
// TestMatmulTileMatchesScalar); rows the tiles leave (and a narrow last
// panel's rows) take one more tile over zero-padded rows (each lane's sum
// is its own, so the padding changes no kept bit). Float32 A is widened
// once per block of rows (at most matmulABlock elements) and shared by the
// panels, rather than once per tile; float64 A is read in place. With
// float32 A (and B values that are float32 values, as every pack writes)
// each product is exact in float64 (24 + 24 significant bits, no
// underflow or overflow), so a fused multiply-add rounds exactly where the
// unfused add does: round(a*b + s) = round(fl(a*b) + s). Those products
// use the fused tile, float64 A (inexact products: MXFP4MoE's activations,
// the softmax weights of DSASparseAttention) the unfused one. With s
// non-nil it also writes s = |A| @ |B| (the bound S of the MXFP4 GEMMs)
// from the same panels, their signs cleared in place after dst's tiles:
// |float64(a*b)| = float64(|a|*|b|), so s has the bits of a second product
// over the magnitudes, without packing B twice. Needs hasMatmulTile.
func tilePanels[A float32 | float64](dst, s []float64, a []A, m, k, n int, pack func(panel []float64, j0, cols int)) {
	tilePanelsOn(numWorkers((n+15)/16), dst, s, a, m, k, n, pack)
}

// tilePanelsOn is tilePanels on up to workers goroutines (1: the caller's).
func tilePanelsOn[A float32 | float64](workers int, dst, s []float64, a []A, m, k, n int, pack func(panel []float64, j0, cols int)) {
	tilePanelsBlock(workers, matmulABlock, dst, s, a, m, k, n, pack)
}

// tilePanelsBlock is tilePanelsOn widening float32 A in blocks of at most
// aBlock elements (whole rows, at least 4); the block size changes no bit.
func tilePanelsBlock[A float32 | float64](workers, aBlock int, dst, s []float64, a []A, m, k, n int, pack func(panel []float64, j0, cols int)) {
	a64, inPlace := any(a).([]float64)
	blockRows := m
	tile, tile8 := tileKernel(tile4x16FMA), tileKernel(tile8x16FMA)
	if inPlace {
		tile, tile8 = tile4x16, nil
	} else {
		blockRows = min(m, max(4, (aBlock/k)&^3))
		a64 = make([]float64, blockRows*k)
	}
	var abs64 []float64
	if s != nil {
		abs64 = make([]float64, blockRows*k)
	}
	panels := (n + 15) / 16
	workers = max(1, min(workers, panels))
	type scratch struct {
		panel, rows []float64
		tile        [4 * 16]float64
	}
	ws := make([]scratch, workers)
	for r0 := 0; r0 < m; r0 += blockRows {
		rows := min(blockRows, m-r0)
		var ab, sb []float64
		if inPlace {
			ab = a64[r0*k : (r0+rows)*k]
		} else {
			ab = a64[:rows*k]
			for i, v := range a[r0*k : (r0+rows)*k] {
				ab[i] = float64(v)
			}
		}
		if s != nil {
			sb = abs64[:rows*k]
			for i, v := range ab {
				sb[i] = math.Abs(v)
			}
		}
		parallelFor(workers, panels, func(w, u int) {
			sc := &ws[w]
			if sc.panel == nil {
				sc.panel = make([]float64, 16*k)
				sc.rows = make([]float64, 4*k)
			}
			j0 := 16 * u
			cols := min(16, n-j0)
			panel := sc.panel
			if cols < 16 {
				clear(panel)
			}
			pack(panel, j0, cols)
			panelTiles(tile, tile8, dst[r0*n:], ab, panel, sc.rows, &sc.tile, rows, k, n, j0, cols)
			if s != nil {
				for i, v := range panel {
					panel[i] = math.Abs(v)
				}
				panelTiles(tile, tile8, s[r0*n:], sb, panel, sc.rows, &sc.tile, rows, k, n, j0, cols)
			}
		})
	}
}

// tileKernel is a tile kernel's signature (tile4x16 and its kin).
type tileKernel = func(dst []float64, ldd int, a []float64, lda int, b []float64, k int)

// panelTiles computes dst's columns j0..j0+cols-1 of rows 0..m-1 from one
// packed panel: 8-row tiles in place (tile8, when not nil: the same sums
// as two 4-row tiles), 4-row tiles, then the rows they leave (and a
// narrow panel's rows) as one more tile over zero-padded rows into
// scratch, copied out.
func panelTiles(tile, tile8 tileKernel, dst, a64, panel, rowBuf []float64, buf *[4 * 16]float64, m, k, n, j0, cols int) {
	i := 0
	if cols == 16 {
		if tile8 != nil {
			for ; i+8 <= m; i += 8 {
				tile8(dst[i*n+j0:], n, a64[i*k:], k, panel, k)
			}
		}
		for ; i+4 <= m; i += 4 {
			tile(dst[i*n+j0:], n, a64[i*k:], k, panel, k)
		}
	}
	for ; i < m; i += 4 {
		rows := min(4, m-i)
		copy(rowBuf, a64[i*k:(i+rows)*k])
		clear(rowBuf[rows*k:])
		tile(buf[:], 16, rowBuf, k, panel, k)
		for r := range rows {
			copy(dst[(i+r)*n+j0:(i+r)*n+j0+cols], buf[r*16:r*16+cols])
		}
	}
}
