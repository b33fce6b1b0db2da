//go:build !purego

package golden

import "golang.org/x/sys/cpu"

//go:noescape
func orderedMinMaxAVX2(hi, lo *int16, src *uint16, row, cnt int)

// hasMetaVec selects the AVX2 max/min (TestBlockMetadataHalfSpecials checks
// it against the float32 kernel, bit for bit).
var hasMetaVec = cpu.X86.HasAVX && cpu.X86.HasAVX2 && cpu.X86.HasF16C

// orderedMinMax folds tokens 1..cnt-1 of a block (token stride row) into
// hi and lo, which hold token 0's ordered keys.
func orderedMinMax(hi, lo []int16, src []uint16, row, cnt int) {
	if hasMetaVec && row%16 == 0 && cnt > 1 {
		_ = src[(cnt-1)*row+row-1]
		_ = hi[row-1]
		_ = lo[row-1]
		orderedMinMaxAVX2(&hi[0], &lo[0], &src[0], row, cnt)
		return
	}
	orderedMinMaxGo(hi, lo, src, row, cnt)
}
