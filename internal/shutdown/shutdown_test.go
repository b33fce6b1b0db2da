package shutdown

import (
	"testing"
	"time"
)

// Exit waits for a Critical section, then runs the cleanups still
// registered (not the released ones) and exits with the code. The fake exit
// never returns, so the package lock stays held as in a real exit: keep
// this the package's only test that calls Exit.
func TestExitWaitsForCritical(t *testing.T) {
	exited := make(chan int, 1)
	exit = func(code int) { exited <- code; select {} } // os.Exit never returns
	defer func() { exit = nil }()
	var ran []string
	keep := OnExit(func() { ran = append(ran, "keep") })
	_ = keep
	OnExit(func() { ran = append(ran, "dropped") })() // released at once
	inCritical, leave := make(chan bool), make(chan bool)
	go Critical(func() error { inCritical <- true; <-leave; return nil })
	<-inCritical
	go Exit(130)
	select {
	case <-exited:
		t.Fatal("Exit did not wait for the critical section")
	case <-time.After(50 * time.Millisecond):
	}
	leave <- true
	select {
	case code := <-exited:
		if code != 130 || len(ran) != 1 || ran[0] != "keep" {
			t.Errorf("Exit(130): code %d, cleanups %v", code, ran)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Exit did not exit after the critical section")
	}
}
