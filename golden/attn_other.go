//go:build !amd64 || purego

package golden

var hasAttnVec = false

func qkQuad([]float64, int, []float64, kvView, int, int, int, int, float64) {
	panic("golden: no attention tiles")
}

func pvQuad([]float64, []float64, int, kvView, int, int, int, int) {
	panic("golden: no attention tiles")
}
