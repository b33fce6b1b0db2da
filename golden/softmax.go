package golden

import (
	"math"

	"github.com/goldset/goldset/internal/detmath"
)

// Softmax computes, for each row of x [m, n], dst = exp(x - max) / sum(exp(x - max))
// (docs/spec.md §2) in float64, plus rowMax[i] = max_j x[i,j] and
// rowSum[i] = sum_j exp(x[i,j] - rowMax[i]). rowMax and rowSum may be nil.
//
// -Inf entries contribute exactly 0. A fully masked row (all -Inf, or n = 0)
// has rowMax -Inf, rowSum 0 and dst 0. The sum runs in j order; each output
// is exp(x - max) divided by the sum (one rounding each). NaN inputs (and
// +Inf, for which x - max is NaN) propagate to the whole row.
func Softmax(dst, rowMax, rowSum []float64, x []float32, m, n int) {
	checkSoftmax(dst, rowMax, rowSum, x, m, n)
	parallelFor(numWorkers(m), m, func(_, i int) {
		y := dst[i*n : (i+1)*n]
		mx, sum := softmaxRow(y, x[i*n:(i+1)*n])
		if rowMax != nil {
			rowMax[i] = mx
		}
		if rowSum != nil {
			rowSum[i] = sum
		}
	})
}

func checkSoftmax(dst, rowMax, rowSum []float64, x []float32, m, n int) {
	if m < 0 || n < 0 {
		panic(badDims)
	}
	if len(x) != m*n {
		panic(badLenX)
	}
	if len(dst) != m*n {
		panic(badLenDst)
	}
	if rowMax != nil && len(rowMax) != m {
		panic(badLenRowMax)
	}
	if rowSum != nil && len(rowSum) != m {
		panic(badLenRowSum)
	}
}

func softmaxRow(y []float64, x []float32) (mx, sum float64) {
	mx = math.Inf(-1)
	nan := false
	for _, v := range x {
		f := float64(v)
		if f > mx {
			mx = f
		} else if f != f {
			nan = true
		}
	}
	if nan {
		mx = math.NaN()
	}
	if math.IsInf(mx, -1) {
		clear(y)
		return mx, 0
	}
	y = y[:len(x)]
	for j, v := range x {
		e := detmath.Exp(float64(v) - mx) // -Inf - finite = -Inf, Exp(-Inf) = 0
		y[j] = e
		sum += e
	}
	for j := range y {
		y[j] /= sum
	}
	return mx, sum
}
