package cpuslots

import (
	"runtime"
	"testing"
)

// TestRaiseForIO checks that the extra Ps leave Procs (and so every worker
// pool and helper bound) where it was, that a lower GOMAXPROCS still wins,
// and that restore puts GOMAXPROCS back.
func TestRaiseForIO(t *testing.T) {
	if v := runtime.GOMAXPROCS(0); v < 1 {
		t.Fatal(v)
	}
	t.Setenv("GOMAXPROCS", "") // RaiseForIO leaves an explicit setting alone; make it unset here
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(3)
	restore := RaiseForIO(2)
	if got := runtime.GOMAXPROCS(0); got != 5 {
		t.Fatalf("GOMAXPROCS after RaiseForIO(2) = %d, want 5", got)
	}
	if got := Procs(); got != 3 {
		t.Fatalf("Procs after RaiseForIO = %d, want 3", got)
	}
	if nested := RaiseForIO(2); runtime.GOMAXPROCS(0) != 5 {
		t.Fatal("a nested RaiseForIO raised again")
	} else {
		nested()
	}
	runtime.GOMAXPROCS(1)
	if got := Procs(); got != 1 {
		t.Fatalf("Procs with GOMAXPROCS lowered to 1 = %d, want 1", got)
	}
	runtime.GOMAXPROCS(5)
	restore()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS after restore = %d, want 3", got)
	}
	if got := Procs(); got != 3 {
		t.Fatalf("Procs after restore = %d, want 3", got)
	}
}

func TestRaiseForIORespectsEnv(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	restore := RaiseForIO(2)
	got := runtime.GOMAXPROCS(0)
	restore()
	if got != 2 {
		t.Fatalf("GOMAXPROCS=%d with GOMAXPROCS=2 in the environment, want 2", got)
	}
}
