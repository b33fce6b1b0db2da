package serving

import (
	"math"
	"sort"
)

// Percentile is numpy.percentile's default ("linear") method on a copy of xs,
// so figures recomputed here equal the tools' own; NaN for no data.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return percentileSorted(s, p)
}

func percentileSorted(s []float64, p float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	// float64(...) around products that feed a sum stops arm64's FMA fusion,
	// so percentiles are the same bits on every architecture.
	pos := float64(p / 100 * float64(len(s)-1))
	lo := int(math.Floor(pos))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	frac := pos - float64(lo)
	return s[lo] + float64((s[lo+1]-s[lo])*frac)
}

// peakConcurrency is the most successful requests in flight at once over
// half-open intervals [start, start+latency), ends before starts on ties (as
// vLLM's calculate_metrics sweep).
func peakConcurrency(starts, latencies []float64, errs []string) int {
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for i := range starts {
		if errs != nil && errs[i] != "" {
			continue
		}
		evs = append(evs, ev{starts[i], 1}, ev{starts[i] + latencies[i], -1})
	}
	sort.Slice(evs, func(a, b int) bool {
		if evs[a].t != evs[b].t {
			return evs[a].t < evs[b].t
		}
		return evs[a].d < evs[b].d
	})
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
}
