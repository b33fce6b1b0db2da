//go:build !unix

package golden_test

func cpuSeconds() float64 { return 0 }
