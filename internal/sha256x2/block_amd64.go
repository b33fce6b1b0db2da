//go:build amd64 && !purego

package sha256x2

import "golang.org/x/sys/cpu"

//go:noescape
func blockSHANI(h *[8]uint32, p *byte, n int, k *[64]uint32, flip *[16]byte)

//go:noescape
func blockSHANIx2(ha, hb *[8]uint32, pa, pb *byte, n int, k *[64]uint32, flip *[16]byte)

func cpuid7() (ebx uint32)

// hasSHANI: CPUID.(EAX=7,ECX=0):EBX bit 29 is the SHA extensions (x/sys/cpu
// does not report them); the kernels also use AVX, SSE4.1 and SSSE3.
var hasSHANI = cpu.X86.HasAVX && cpu.X86.HasSSE41 && cpu.X86.HasSSSE3 && cpuid7()&(1<<29) != 0

// flipMask reverses the bytes of each 32-bit word (SHA-256 is big-endian).
var flipMask = [16]byte{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12}

func block(h *[8]uint32, p []byte) {
	if n := len(p) / BlockSize; n > 0 && hasSHANI && !ForceGo {
		blockSHANI(h, &p[0], n, &k256, &flipMask)
		return
	}
	blockGeneric(h, p)
}

func block2(ha, hb *[8]uint32, pa, pb []byte) {
	if n := len(pa) / BlockSize; n > 0 && hasSHANI && !ForceGo {
		blockSHANIx2(ha, hb, &pa[0], &pb[0], n, &k256, &flipMask)
		return
	}
	blockGeneric(ha, pa)
	blockGeneric(hb, pb)
}
