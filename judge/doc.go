// Package judge judges kernel timings against a case's exact work
// (docs/spec.md §13): device profiles (peak bandwidth and dense FLOP/s per
// dtype, cited, profiles.go), the floor max(bytes/bandwidth, flops/peak)
// below which no correct kernel can run, and the timing file the Python
// judge writes (schema goldset-timing/1, timing.go): per case the median,
// a seeded bootstrap 95% interval of the median, achieved bandwidth and
// FLOP rate, peak_fraction per profile, and FAIL for any iteration below
// the enforced floor.
package judge
