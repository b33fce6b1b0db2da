package schedule

import "errors"

// Sentinel errors, wrapped with what is wrong.
var (
	// ErrConfig: a Config field is out of range.
	ErrConfig = errors.New("schedule: bad config")
	// ErrRequest: a request is malformed or can never fit the KV block budget.
	ErrRequest = errors.New("schedule: bad request")
	// ErrWorkload: a workload file cannot be parsed.
	ErrWorkload = errors.New("schedule: bad workload")
	// ErrStuck: a step scheduled nothing while requests were left (a bug
	// guard: the simulation stops instead of looping forever).
	ErrStuck = errors.New("schedule: no progress")
	// ErrStop, returned by a visit function, ends the simulation early
	// without error; the Summary says Truncated.
	ErrStop = errors.New("schedule: stop")
)
