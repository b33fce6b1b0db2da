// Package goldentest is a conformance suite for implementations of the
// golden kernels, in the style of gonum's blas/testblas: each TestXxx
// function takes a testing.TB and an implementation with the golden
// signature, runs it on random and edge cases, and checks it against
// small independent reference implementations kept in this package.
//
// Every check allocates outputs inside NaN guard bands (distinct NaN
// payloads before and after the slice handed to the implementation, which
// has its capacity clipped) and fails if a pad changes; inputs are
// checksummed before and after the call. Float results must be within
// Tol (relative to the RMS of the reference row set) of the float64
// reference: the suite is for float64-exact implementations, so honest
// float32 kernels are expected to fail it. The DSA suites (dsa.go) are
// stricter: ops.md §8 fixes every summation order, so they compare float
// results bit for bit and selections exactly.
//
// Inputs of attention cases hold NaN in every cache slot that is not a
// valid token and -1 or out-of-range entries in block-table columns past
// ceil(L/BS), so an implementation that reads them fails.
package goldentest
