//go:build !amd64 || purego

package gen

var useAVX512 = false

// chunkHalfVec has no vector kernel here.
func chunkHalfVec(uint64, []uint16, float64, bool) bool { return false }
