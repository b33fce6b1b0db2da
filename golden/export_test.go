package golden

// attnVecCPU is whether this CPU can run the attention tiles.
var attnVecCPU = hasAttnVec

// SetAttnVec turns the AVX-512 attention tiles on or off (on only where
// the CPU has them) and returns the previous setting.
func SetAttnVec(on bool) bool {
	old := hasAttnVec
	hasAttnVec = on && attnVecCPU
	return old
}
