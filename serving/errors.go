package serving

import "errors"

// Sentinel errors, wrapped with the file and what is wrong.
var (
	// ErrWorkload: the workload manifest cannot be read or is not one.
	ErrWorkload = errors.New("serving: bad workload manifest")
	// ErrResult: a result file cannot be read or is in no known format.
	ErrResult = errors.New("serving: bad result file")
	// ErrModel: a model config is unknown or incomplete.
	ErrModel = errors.New("serving: bad model config")
	// ErrNotComparable: two results may not be ranked against each other.
	ErrNotComparable = errors.New("serving: results not comparable")
)
