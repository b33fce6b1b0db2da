package suite

import "github.com/goldset/goldset/compare"

// tolerance is the compare rule recorded next to an output.
func tolerance(op, output, dtype string) any {
	t := compare.DefaultTolerance(op, output, dtype)
	return &t
}
