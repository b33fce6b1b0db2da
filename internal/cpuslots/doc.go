// Package cpuslots runs goldset's parallel loops under one process-wide
// bound on their helper goroutines.
//
// A build runs several cases at once and each case's kernels split their
// loops over Procs() goroutines (GOMAXPROCS unless RaiseForIO added Ps
// for I/O), so without a bound a 16-core machine
// can hold hundreds of runnable goroutines. The scheduler shares the CPUs
// among them evenly, and a goroutine on the build's critical path (the
// writer hashing a case's largest tensor) then gets a small share of a
// core. Under this package a loop runs on its caller plus as many helpers
// as there are free slots (Procs()-1 in the whole process), and the
// caller keeps recruiting helpers between units as slots free up, so a
// loop that starts on a busy machine still spreads once others end.
//
// The unit a worker runs and the worker number it gets vary from run to
// run; callers make every unit independent (each unit writes its own
// outputs, scratch is indexed by worker), so results never depend on it.
package cpuslots
