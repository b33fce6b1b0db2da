//go:build !purego

package npy

import "golang.org/x/sys/cpu"

//go:noescape
func f16sToF32sF16C(dst *float32, src *uint16, n int) int

// hasF16C: f16sToF32sF16C needs AVX2 and F16C.
var hasF16C = cpu.X86.HasAVX && cpu.X86.HasAVX2 && cpu.X86.HasF16C

// widenF16 widens a prefix of src into dst with F16C and returns its length
// (a multiple of 16, stopping before a group that holds Inf or NaN).
func widenF16(dst []float32, src []uint16) int {
	if !hasF16C || len(src) < 16 {
		return 0
	}
	return f16sToF32sF16C(&dst[0], &src[0], len(src))
}

//go:noescape
func bf16sToF32sAVX2(dst *float32, src *uint16, n int) int

// widenBF16 widens a prefix of src into dst with AVX2 and returns its
// length (a multiple of 16).
func widenBF16(dst []float32, src []uint16) int {
	if !hasF16C || len(src) < 16 {
		return 0
	}
	return bf16sToF32sAVX2(&dst[0], &src[0], len(src))
}
