//go:build !amd64 || purego

package golden

var hasMatmulTile = false

func tile4x16([]float64, int, []float64, int, []float64, int) { panic("golden: no tile kernel") }

func tile4x16FMA([]float64, int, []float64, int, []float64, int) { panic("golden: no tile kernel") }

func tile8x16FMA([]float64, int, []float64, int, []float64, int) { panic("golden: no tile kernel") }
