package dtype

import (
	"math"
	"sort"
)

// The independent tables: every code's value written out from the OCP
// specifications (OFP8 v1.0 for E4M3, MX v1.0 sections 5.3.3 and 5.4.1 for
// E2M1 and E8M0), not computed by the code under test. TestFixtureDecodes
// checks them against ml_dtypes' and torch's decodes in testdata/codes.txt.

var nan = math.NaN()

// e4m3Hand holds the non-negative float8_e4m3fn codes 0x00..0x7f; code
// 0x80|c is the negation of code c.
var e4m3Hand = [128]float64{
	// e=0 (subnormal: m/8 * 2^-6)
	0, 0.001953125, 0.00390625, 0.005859375, 0.0078125, 0.009765625, 0.01171875, 0.013671875,
	// e=1: (1+m/8) * 2^-6
	0.015625, 0.017578125, 0.01953125, 0.021484375, 0.0234375, 0.025390625, 0.02734375, 0.029296875,
	// e=2: (1+m/8) * 2^-5
	0.03125, 0.03515625, 0.0390625, 0.04296875, 0.046875, 0.05078125, 0.0546875, 0.05859375,
	// e=3: (1+m/8) * 2^-4
	0.0625, 0.0703125, 0.078125, 0.0859375, 0.09375, 0.1015625, 0.109375, 0.1171875,
	// e=4: (1+m/8) * 2^-3
	0.125, 0.140625, 0.15625, 0.171875, 0.1875, 0.203125, 0.21875, 0.234375,
	// e=5: (1+m/8) * 2^-2
	0.25, 0.28125, 0.3125, 0.34375, 0.375, 0.40625, 0.4375, 0.46875,
	// e=6: (1+m/8) * 2^-1
	0.5, 0.5625, 0.625, 0.6875, 0.75, 0.8125, 0.875, 0.9375,
	// e=7: (1+m/8) * 2^0
	1, 1.125, 1.25, 1.375, 1.5, 1.625, 1.75, 1.875,
	// e=8: (1+m/8) * 2^1
	2, 2.25, 2.5, 2.75, 3, 3.25, 3.5, 3.75,
	// e=9: (1+m/8) * 2^2
	4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5,
	// e=10: (1+m/8) * 2^3
	8, 9, 10, 11, 12, 13, 14, 15,
	// e=11: (1+m/8) * 2^4
	16, 18, 20, 22, 24, 26, 28, 30,
	// e=12: (1+m/8) * 2^5
	32, 36, 40, 44, 48, 52, 56, 60,
	// e=13: (1+m/8) * 2^6
	64, 72, 80, 88, 96, 104, 112, 120,
	// e=14: (1+m/8) * 2^7
	128, 144, 160, 176, 192, 208, 224, 240,
	// e=15: (1+m/8) * 2^8; all ones is NaN (no Inf)
	256, 288, 320, 352, 384, 416, 448, nan,
}

// e2m1Hand holds the non-negative E2M1 codes 0..7; code 8|c is -value.
var e2m1Hand = [8]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}

// e8m0Hand holds every E8M0 byte: 2^(b-127), 255 is NaN.
var e8m0Hand = [256]float64{
	0x1p-127, 0x1p-126, 0x1p-125, 0x1p-124, 0x1p-123, 0x1p-122, 0x1p-121, 0x1p-120,
	0x1p-119, 0x1p-118, 0x1p-117, 0x1p-116, 0x1p-115, 0x1p-114, 0x1p-113, 0x1p-112,
	0x1p-111, 0x1p-110, 0x1p-109, 0x1p-108, 0x1p-107, 0x1p-106, 0x1p-105, 0x1p-104,
	0x1p-103, 0x1p-102, 0x1p-101, 0x1p-100, 0x1p-99, 0x1p-98, 0x1p-97, 0x1p-96,
	0x1p-95, 0x1p-94, 0x1p-93, 0x1p-92, 0x1p-91, 0x1p-90, 0x1p-89, 0x1p-88,
	0x1p-87, 0x1p-86, 0x1p-85, 0x1p-84, 0x1p-83, 0x1p-82, 0x1p-81, 0x1p-80,
	0x1p-79, 0x1p-78, 0x1p-77, 0x1p-76, 0x1p-75, 0x1p-74, 0x1p-73, 0x1p-72,
	0x1p-71, 0x1p-70, 0x1p-69, 0x1p-68, 0x1p-67, 0x1p-66, 0x1p-65, 0x1p-64,
	0x1p-63, 0x1p-62, 0x1p-61, 0x1p-60, 0x1p-59, 0x1p-58, 0x1p-57, 0x1p-56,
	0x1p-55, 0x1p-54, 0x1p-53, 0x1p-52, 0x1p-51, 0x1p-50, 0x1p-49, 0x1p-48,
	0x1p-47, 0x1p-46, 0x1p-45, 0x1p-44, 0x1p-43, 0x1p-42, 0x1p-41, 0x1p-40,
	0x1p-39, 0x1p-38, 0x1p-37, 0x1p-36, 0x1p-35, 0x1p-34, 0x1p-33, 0x1p-32,
	0x1p-31, 0x1p-30, 0x1p-29, 0x1p-28, 0x1p-27, 0x1p-26, 0x1p-25, 0x1p-24,
	0x1p-23, 0x1p-22, 0x1p-21, 0x1p-20, 0x1p-19, 0x1p-18, 0x1p-17, 0x1p-16,
	0x1p-15, 0x1p-14, 0x1p-13, 0x1p-12, 0x1p-11, 0x1p-10, 0x1p-9, 0x1p-8,
	0x1p-7, 0x1p-6, 0x1p-5, 0x1p-4, 0x1p-3, 0x1p-2, 0x1p-1, 1,
	0x1p1, 0x1p2, 0x1p3, 0x1p4, 0x1p5, 0x1p6, 0x1p7, 0x1p8,
	0x1p9, 0x1p10, 0x1p11, 0x1p12, 0x1p13, 0x1p14, 0x1p15, 0x1p16,
	0x1p17, 0x1p18, 0x1p19, 0x1p20, 0x1p21, 0x1p22, 0x1p23, 0x1p24,
	0x1p25, 0x1p26, 0x1p27, 0x1p28, 0x1p29, 0x1p30, 0x1p31, 0x1p32,
	0x1p33, 0x1p34, 0x1p35, 0x1p36, 0x1p37, 0x1p38, 0x1p39, 0x1p40,
	0x1p41, 0x1p42, 0x1p43, 0x1p44, 0x1p45, 0x1p46, 0x1p47, 0x1p48,
	0x1p49, 0x1p50, 0x1p51, 0x1p52, 0x1p53, 0x1p54, 0x1p55, 0x1p56,
	0x1p57, 0x1p58, 0x1p59, 0x1p60, 0x1p61, 0x1p62, 0x1p63, 0x1p64,
	0x1p65, 0x1p66, 0x1p67, 0x1p68, 0x1p69, 0x1p70, 0x1p71, 0x1p72,
	0x1p73, 0x1p74, 0x1p75, 0x1p76, 0x1p77, 0x1p78, 0x1p79, 0x1p80,
	0x1p81, 0x1p82, 0x1p83, 0x1p84, 0x1p85, 0x1p86, 0x1p87, 0x1p88,
	0x1p89, 0x1p90, 0x1p91, 0x1p92, 0x1p93, 0x1p94, 0x1p95, 0x1p96,
	0x1p97, 0x1p98, 0x1p99, 0x1p100, 0x1p101, 0x1p102, 0x1p103, 0x1p104,
	0x1p105, 0x1p106, 0x1p107, 0x1p108, 0x1p109, 0x1p110, 0x1p111, 0x1p112,
	0x1p113, 0x1p114, 0x1p115, 0x1p116, 0x1p117, 0x1p118, 0x1p119, 0x1p120,
	0x1p121, 0x1p122, 0x1p123, 0x1p124, 0x1p125, 0x1p126, 0x1p127, nan,
}

// handValue returns the hand table's value of code c of a byte type.
func handValue(d DType, c int) float64 {
	switch d {
	case Float8E4M3FN:
		if c >= 0x80 {
			return -e4m3Hand[c-0x80]
		}
		return e4m3Hand[c]
	case Float4E2M1x2:
		if c >= 8 {
			return -e2m1Hand[c-8]
		}
		return e2m1Hand[c]
	case Float8E8M0:
		return e8m0Hand[c]
	case Uint8:
		return float64(c)
	}
	panic("handValue: " + d.Name())
}

// numCodes is the number of codes a byte type's Round returns.
func numCodes(d DType) int {
	if d == Float4E2M1x2 {
		return 16
	}
	return 256
}

// naiveRound is the second implementation of Round for the byte types: a
// search over the hand table's magnitudes for the two neighbours of |x|,
// then an exact comparison with their midpoint (exact in float64: adjacent
// values of these formats differ in at most a few low bits).
func naiveRound(d DType, x float64) int {
	// Magnitudes in ascending order with their codes.
	var mags []float64
	switch d {
	case Float8E4M3FN:
		mags = e4m3Hand[:0x7f] // up to 448
	case Float4E2M1x2:
		mags = e2m1Hand[:]
	case Float8E8M0:
		mags = e8m0Hand[:255]
	}
	neg := math.Signbit(x)
	switch d {
	case Float8E4M3FN, Float4E2M1x2:
		signCode := 0x80
		if d == Float4E2M1x2 {
			signCode = 8
		}
		if math.IsNaN(x) {
			if d == Float4E2M1x2 {
				return 8
			}
			return 0x7f
		}
		c := nearest(mags, math.Abs(x), true)
		if neg {
			c |= signCode
		}
		return c
	case Float8E8M0:
		if math.IsNaN(x) || (neg && x != 0) || math.IsInf(x, 1) {
			return 255
		}
		if x >= 1.5*0x1p127 { // nearer to 2^128, which E8M0 lacks
			return 255
		}
		return nearest(mags, x, false)
	}
	panic("naiveRound: " + d.Name())
}

// nearest returns the index of the value in the ascending mags nearest to
// a >= 0, saturating at both ends; a tie goes to the even index when
// tieEven is set, else up.
func nearest(mags []float64, a float64, tieEven bool) int {
	i := sort.SearchFloat64s(mags, a) // first index with mags[i] >= a
	if i == len(mags) {
		return len(mags) - 1
	}
	if mags[i] == a || i == 0 {
		return i
	}
	lo, hi := mags[i-1], mags[i]
	mid := lo + (hi-lo)/2
	switch {
	case a < mid:
		return i - 1
	case a > mid:
		return i
	case tieEven && (i-1)%2 == 0:
		return i - 1
	}
	return i
}
