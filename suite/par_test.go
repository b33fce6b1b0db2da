package suite

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestForOrdered checks that items are emitted in order whatever order
// they finish in, that at most window items are out at once, that every
// item runs exactly once, and the error rules.
func TestForOrdered(t *testing.T) {
	for _, tc := range []struct{ workers, window, n int }{{1, 1, 7}, {2, 4, 50}, {3, 3, 20}, {4, 8, 100}, {8, 2, 5}, {2, 4, 0}} {
		t.Run(fmt.Sprintf("w%d-win%d-n%d", tc.workers, tc.window, tc.n), func(t *testing.T) {
			var out []int
			var inFlight, maxFlight atomic.Int64
			ran := make([]atomic.Int32, tc.n)
			work := func(b, w int) error {
				if w < 0 || w >= tc.workers {
					t.Errorf("worker slot %d out of range", w)
				}
				ran[b].Add(1)
				if f := inFlight.Add(1); f > maxFlight.Load() {
					maxFlight.Store(f)
				}
				// Early items are slow, so later ones finish first.
				time.Sleep(time.Duration((tc.n-b)%5) * 200 * time.Microsecond)
				return nil
			}
			err := forOrdered(tc.workers, tc.window, tc.n, nil, work, func(b int) error {
				inFlight.Add(-1)
				out = append(out, b)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range out {
				if b != i {
					t.Fatalf("emitted %v, want 0..%d in order", out, tc.n-1)
				}
			}
			if len(out) != tc.n {
				t.Fatalf("emitted %d items, want %d", len(out), tc.n)
			}
			for b := range ran {
				if ran[b].Load() != 1 {
					t.Fatalf("item %d ran %d times", b, ran[b].Load())
				}
			}
			if limit := int64(max(tc.window, min(tc.workers, tc.n))); maxFlight.Load() > limit {
				t.Errorf("%d items out at once, window %d", maxFlight.Load(), limit)
			}
		})
	}

	errWork := errors.New("work failed")
	var emitted []int
	err := forOrdered(2, 4, 40, nil, func(b, _ int) error {
		if b == 9 || b == 12 {
			return fmt.Errorf("item %d: %w", b, errWork)
		}
		return nil
	}, func(b int) error { emitted = append(emitted, b); return nil })
	if !errors.Is(err, errWork) || err.Error() != "item 9: work failed" {
		t.Errorf("error = %v, want the lowest failing item's", err)
	}
	for _, b := range emitted {
		if b >= 9 {
			t.Errorf("item %d emitted after item 9 failed", b)
		}
	}
	errEmit := errors.New("emit failed")
	var started atomic.Int64
	err = forOrdered(2, 2, 1000, nil, func(b, _ int) error { started.Add(1); return nil }, func(b int) error {
		if b == 3 {
			return errEmit
		}
		return nil
	})
	if err != errEmit {
		t.Errorf("error = %v, want the emit error", err)
	}
	if s := started.Load(); s > 3+2+2 {
		t.Errorf("%d items started after an emit error at item 3 (window 2)", s)
	}
}
