// Package cpu reports the x86 vector extensions that goldset's assembly
// kernels use, asking CPUID and XGETBV directly so that packages low in the
// dependency graph (npy, gen) need nothing beyond the standard library.
// The kernels are exact: they give the same bits as the portable Go code,
// so a flag only changes speed, never output.
package cpu

// X86 holds the features; all false on other architectures.
var X86 struct {
	HasAVX2F16C bool // AVX2 and F16C, with YMM state enabled by the OS
	HasAVX512F  bool // AVX-512 Foundation, with ZMM and opmask state enabled
}
