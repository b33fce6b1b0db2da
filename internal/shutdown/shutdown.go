package shutdown

import (
	"os"
	"sync"
)

var (
	mu       sync.Mutex // held by a Critical section and by Exit
	next     int
	cleanups = map[int]func(){}
)

// Critical runs fn so that Exit cannot happen while it runs.
func Critical(fn func() error) error {
	mu.Lock()
	defer mu.Unlock()
	return fn()
}

// OnExit registers fn to run if Exit is called; release unregisters it and
// waits for a running Exit (which then ends the process). fn must not call
// into this package.
func OnExit(fn func()) (release func()) {
	mu.Lock()
	id := next
	next++
	cleanups[id] = fn
	mu.Unlock()
	return func() {
		mu.Lock()
		delete(cleanups, id)
		mu.Unlock()
	}
}

// Exit waits for a Critical section in progress, runs the registered
// cleanups and exits the process with code.
func Exit(code int) {
	mu.Lock()
	runLocked()
	exit(code)
}

// RunCleanups runs the cleanups registered now and forgets them, as Exit
// does before exiting (for tests of what a forced exit leaves).
func RunCleanups() {
	mu.Lock()
	defer mu.Unlock()
	runLocked()
}

func runLocked() {
	for id, fn := range cleanups {
		fn()
		delete(cleanups, id)
	}
}

// exit is os.Exit; tests replace it.
var exit = os.Exit
