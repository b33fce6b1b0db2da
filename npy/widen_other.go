//go:build !amd64 || purego

package npy

// widenF16 has no vector path here; F16sToF32s uses its table.
func widenF16([]float32, []uint16) int { return 0 }

// widenBF16 has no vector path here.
func widenBF16([]float32, []uint16) int { return 0 }
