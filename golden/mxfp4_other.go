//go:build !amd64 || purego

package golden

var hasMXVec = false

func quantizeUnitVec(codes, scales []uint8, xf []uint32, xh []uint16, amax []uint32, mode ScaleMode) {
	panic("golden: no vector quantizer on this build")
}

func hasNonFinite32(xb []uint32) bool { return firstNonFinite32(xb) >= 0 }

func hasNonFiniteBF16(xh []uint16) bool { return firstNonFiniteBF16(xh) >= 0 }
