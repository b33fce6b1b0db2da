//go:build !amd64 || purego

package golden

var hasDSAVec = false

func dsaE4M3CodesVec([]uint8, []float32, float32) int { return 0 }

func dsaHeadSumsVec(_, _, _, _, _ []float64, _ int) int { return 0 }

func dsaAbsMaxBitsVec([]float32) (uint32, int) { return 0, 0 }
