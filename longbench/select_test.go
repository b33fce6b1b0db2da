package longbench

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestSplitMix64Reference(t *testing.T) {
	// First outputs of the reference splitmix64.c seeded with 0 and with
	// 1234567 (as published with xoshiro's seeding code and in many ports).
	r := NewSplitMix64(0)
	want0 := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}
	for i, w := range want0 {
		if g := r.Uint64(); g != w {
			t.Errorf("seed 0 output %d: %#x, want %#x", i, g, w)
		}
	}
	r = NewSplitMix64(1234567)
	want1 := []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423}
	for i, w := range want1 {
		if g := r.Uint64(); g != w {
			t.Errorf("seed 1234567 output %d: %d, want %d", i, g, w)
		}
	}
}

func TestIntNUniform(t *testing.T) {
	r := NewSplitMix64(42)
	const n, draws = 7, 70000
	var counts [n]int
	for range draws {
		counts[r.IntN(n)]++
	}
	for i, c := range counts {
		if c < draws/n*9/10 || c > draws/n*11/10 {
			t.Errorf("bucket %d: %d draws, want about %d", i, c, draws/n)
		}
	}
}

// synthLengths mimics a LongBench-like spread: 2k..40k, skewed.
func synthLengths(n int, seed uint64) []int {
	r := NewSplitMix64(seed)
	l := make([]int, n)
	for i := range l {
		a, b := r.IntN(19000), r.IntN(19000)
		l[i] = 2000 + a + b/2 + r.IntN(100)
	}
	return l
}

func TestSelectHitsTarget(t *testing.T) {
	lengths := synthLengths(2000, 7)
	pop := ComputeStats(lengths)
	tests := []struct {
		n      int
		target float64
		seed   uint64
		maxLen int
	}{
		{100, pop.Mean, 1, 0},
		{100, 6000, 1, 0},
		{100, 25000, 2, 0},
		{500, 12000, 3, 0},
		{10, 30000, 4, 0},
		{1, 8000, 5, 0},
		{200, 10000, 6, 20000},
		{2000, pop.Mean, 7, 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("n%d_t%.0f_max%d", tc.n, tc.target, tc.maxLen), func(t *testing.T) {
			sel, err := Select(lengths, tc.n, SelectOptions{Seed: tc.seed, TargetMean: tc.target, MaxLen: tc.maxLen})
			if err != nil {
				t.Fatal(err)
			}
			if len(sel.Indices) != tc.n || sel.Stats.Count != tc.n {
				t.Fatalf("%d indices", len(sel.Indices))
			}
			seen := map[int]bool{}
			for i, idx := range sel.Indices {
				if seen[idx] || (i > 0 && idx <= sel.Indices[i-1]) {
					t.Fatalf("indices not strictly ascending/unique: %v", sel.Indices)
				}
				seen[idx] = true
				if sel.Lengths[i] != lengths[idx] || (tc.maxLen > 0 && lengths[idx] > tc.maxLen) {
					t.Fatalf("length %d at %d (max %d)", sel.Lengths[i], idx, tc.maxLen)
				}
			}
			if rel := math.Abs(sel.Stats.Mean-tc.target) / tc.target; rel > DefaultTolerance {
				t.Errorf("mean %.1f is %.2f%% from target %.0f", sel.Stats.Mean, 100*rel, tc.target)
			}
		})
	}
}

func TestSelectDeterministic(t *testing.T) {
	lengths := synthLengths(1000, 9)
	opts := SelectOptions{Seed: 11, TargetMean: 9000}
	a, err := Select(lengths, 50, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Select(lengths, 50, opts)
	if fmt.Sprint(a.Indices) != fmt.Sprint(b.Indices) || a.Swaps != b.Swaps {
		t.Fatal("same seed, different selection")
	}
	opts.Seed = 12
	c, _ := Select(lengths, 50, opts)
	if fmt.Sprint(a.Indices) == fmt.Sprint(c.Indices) {
		t.Error("different seeds gave the same selection")
	}
	// Without a target the result is the plain seeded sample.
	d, err := Select(lengths, 50, SelectOptions{Seed: 11})
	if err != nil || d.Swaps != 0 || len(d.Indices) != 50 {
		t.Fatalf("plain sample: %v swaps %d", err, d.Swaps)
	}
}

func TestSelectErrors(t *testing.T) {
	lengths := []int{100, 200, 300, 400, 10000}
	tests := []struct {
		name    string
		n       int
		opts    SelectOptions
		wantErr error
		wantMsg string
	}{
		{"n too large", 6, SelectOptions{}, ErrNotEnough, "only 5 records"},
		{"n too large after max", 5, SelectOptions{MaxLen: 400}, ErrNotEnough, "1 more exceed max length 400"},
		{"above max", 2, SelectOptions{TargetMean: 6000}, ErrUnreachable, "above the largest achievable mean 5200.0"},
		{"below min", 2, SelectOptions{TargetMean: 100}, ErrUnreachable, "below the smallest achievable mean 150.0"},
		{"gap", 1, SelectOptions{TargetMean: 5000}, ErrUnreachable, "no mix of 1 prompts reaches mean 5000.0"},
		{"zero n", 0, SelectOptions{}, ErrOptions, ""},
		{"negative target", 1, SelectOptions{TargetMean: -1}, ErrOptions, ""},
		{"nan target", 1, SelectOptions{TargetMean: math.NaN()}, ErrOptions, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Select(lengths, tc.n, tc.opts)
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
	// Target within tolerance of the extreme is still reachable.
	sel, err := Select(lengths, 2, SelectOptions{TargetMean: 5300, Seed: 3})
	if err != nil || sel.Stats.Mean != 5200 {
		t.Fatalf("near-max target: %v mean %v", err, sel.Stats.Mean)
	}
}

// Sparse lengths where single swaps from a random start get stuck: the
// sorted-window restart must still find the one good pair.
func TestSelectFallback(t *testing.T) {
	lengths := []int{40925, 20618, 40925, 21762, 40925, 22180, 5296, 40925, 40925}
	fallbacks := 0
	for seed := uint64(0); seed < 32; seed++ {
		sel, err := Select(lengths, 2, SelectOptions{Seed: seed, TargetMean: 21000})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if math.Abs(sel.Stats.Mean/21000-1) > DefaultTolerance {
			t.Fatalf("seed %d: mean %v", seed, sel.Stats.Mean)
		}
		if sel.Fallback {
			fallbacks++
		}
	}
	if fallbacks == 0 {
		t.Error("no seed exercised the fallback")
	}
}

func TestComputeStats(t *testing.T) {
	tests := []struct {
		in   []int
		want Stats
	}{
		{nil, Stats{}},
		{[]int{5}, Stats{Count: 1, Min: 5, P50: 5, P90: 5, Max: 5, Mean: 5, Total: 5}},
		// nearest rank: p50 = 5th of 10, p90 = 9th of 10
		{[]int{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, Stats{Count: 10, Min: 1, P50: 5, P90: 9, Max: 10, Mean: 5.5, Total: 55}},
		{[]int{1, 2, 3}, Stats{Count: 3, Min: 1, P50: 2, P90: 3, Max: 3, Mean: 2, Total: 6}},
	}
	for _, tc := range tests {
		if got := ComputeStats(tc.in); got != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestHistogram(t *testing.T) {
	h := Histogram([]int{1, 1, 1, 1, 2, 10}, 3, 8)
	want := "      1-4       |########| 5\n" +
		"      5-8       |        | 0\n" +
		"      9-10      |##      | 1\n"
	if h != want {
		t.Errorf("got\n%s\nwant\n%s", h, want)
	}
	if got := Histogram([]int{7, 7}, 10, 4); got != "      7-7       |####| 2\n" {
		t.Errorf("single value: %q", got)
	}
	if Histogram(nil, 10, 10) != "" {
		t.Error("empty input")
	}
}
