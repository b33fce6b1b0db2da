package cpu

func cpuidex(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv0() uint32

func init() {
	maxLeaf, _, _, _ := cpuidex(0, 0)
	if maxLeaf < 7 {
		return
	}
	_, _, c1, _ := cpuidex(1, 0)
	const osxsave, avx, f16c = 1 << 27, 1 << 28, 1 << 29
	if c1&osxsave == 0 || c1&avx == 0 {
		return
	}
	xcr0 := xgetbv0()
	if xcr0&6 != 6 { // XMM and YMM state
		return
	}
	_, b7, _, _ := cpuidex(7, 0)
	X86.HasAVX2F16C = b7&(1<<5) != 0 && c1&f16c != 0
	// Opmask, upper ZMM0-15 and ZMM16-31 state too.
	X86.HasAVX512F = b7&(1<<16) != 0 && xcr0&0xe6 == 0xe6
}
