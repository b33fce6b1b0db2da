package npy

func cpuidex(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv0() uint32

//go:noescape
func f16sToF32sF16C(dst *float32, src *uint16, n int) int

// hasF16C reports AVX2 and F16C with the YMM state enabled by the OS, which
// f16sToF32sF16C needs. (npy depends on the standard library only, so it
// asks CPUID itself.)
var hasF16C = func() bool {
	maxLeaf, _, _, _ := cpuidex(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c1, _ := cpuidex(1, 0)
	const osxsave, avx, f16c = 1 << 27, 1 << 28, 1 << 29
	if c1&osxsave == 0 || c1&avx == 0 || c1&f16c == 0 {
		return false
	}
	if xgetbv0()&6 != 6 { // XMM and YMM state saved by the OS
		return false
	}
	_, b7, _, _ := cpuidex(7, 0)
	return b7&(1<<5) != 0 // AVX2
}()

// widenF16 widens a prefix of src into dst with F16C and returns its length
// (a multiple of 16, stopping before a group that holds Inf or NaN).
func widenF16(dst []float32, src []uint16) int {
	if !hasF16C || len(src) < 16 {
		return 0
	}
	return f16sToF32sF16C(&dst[0], &src[0], len(src))
}
