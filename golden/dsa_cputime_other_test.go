//go:build !unix

package golden_test

// dsaCPUSeconds is not measured here; benchmarks then report wall rates only.
func dsaCPUSeconds() float64 { return 0 }
