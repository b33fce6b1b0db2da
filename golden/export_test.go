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

// SetMoEChunkBytes sets MXFP4MoE's chunk budget and returns the previous one.
func SetMoEChunkBytes(n int) int {
	old := moeChunkBytes
	moeChunkBytes = n
	return old
}
