//go:build !amd64 || purego

package golden

var hasMetaVec = false

func orderedMinMax(hi, lo []int16, src []uint16, row, cnt int) {
	orderedMinMaxGo(hi, lo, src, row, cnt)
}
