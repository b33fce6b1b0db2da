//go:build !amd64 || purego

package sha256x2

func block(h *[8]uint32, p []byte) { blockGeneric(h, p) }

func block2(ha, hb *[8]uint32, pa, pb []byte) {
	blockGeneric(ha, pa)
	blockGeneric(hb, pb)
}
