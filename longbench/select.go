package longbench

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
)

// SplitMix64 is the PRNG used for selection (Steele, Lea, Flood 2014; the
// seeding generator of xoshiro). Its output is fixed by its definition, so a
// seed gives the same selection on every platform and Go version.
type SplitMix64 struct{ state uint64 }

// NewSplitMix64 returns a generator seeded with seed.
func NewSplitMix64(seed uint64) *SplitMix64 { return &SplitMix64{state: seed} }

// Uint64 returns the next value.
func (r *SplitMix64) Uint64() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// IntN returns a uniform integer in [0, n) by Lemire's multiply-and-reject
// method (unbiased). It panics if n <= 0.
func (r *SplitMix64) IntN(n int) int {
	if n <= 0 {
		panic("longbench: IntN: n <= 0")
	}
	bound := uint64(n)
	hi, lo := bits.Mul64(r.Uint64(), bound)
	if lo < bound {
		thresh := -bound % bound
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), bound)
		}
	}
	return int(hi)
}

// DefaultTolerance is the relative tolerance of the selected mean.
const DefaultTolerance = 0.02

// SelectOptions control Select.
type SelectOptions struct {
	Seed uint64
	// TargetMean is the wanted mean length; zero means a plain seeded sample.
	TargetMean float64
	// Tolerance is relative (0.02 = within 2%); DefaultTolerance when zero.
	Tolerance float64
	// MaxLen excludes candidates longer than this; zero means no limit.
	MaxLen int
	// MaxTotal, when positive, excludes candidates i with
	// lengths[i] + Output[i] > MaxTotal (prompt plus output over the context).
	MaxTotal int
	// Output holds each candidate's output length (len(lengths) entries)
	// when MaxTotal is set.
	Output []int
}

// Selection is the result of Select.
type Selection struct {
	Indices    []int // indices into the lengths slice, ascending
	Lengths    []int // lengths[Indices[i]]
	Candidates int   // lengths within MaxLen and MaxTotal
	Excluded   int   // lengths above MaxLen or MaxTotal
	Swaps      int   // swaps made by the mean-fitting phase
	Fallback   bool  // the sorted-window restart was needed
	Stats      Stats
}

// Select picks n of the given lengths deterministically from opts.Seed so
// that their mean lies within Tolerance of TargetMean (see the package
// documentation for the algorithm). It fails with ErrNotEnough when fewer
// than n lengths are within MaxLen, and with ErrUnreachable when the target
// lies outside the achievable means or no swap sequence reaches it.
func Select(lengths []int, n int, opts SelectOptions) (Selection, error) {
	tol := opts.Tolerance
	if tol == 0 {
		tol = DefaultTolerance
	}
	if n <= 0 || tol < 0 || opts.TargetMean < 0 || opts.MaxLen < 0 || opts.MaxTotal < 0 || math.IsNaN(opts.TargetMean) || math.IsInf(opts.TargetMean, 0) ||
		(opts.MaxTotal > 0 && len(opts.Output) != len(lengths)) {
		return Selection{}, fmt.Errorf("longbench: select %d prompts, target mean %v, tolerance %v, max length %d: %w",
			n, opts.TargetMean, tol, opts.MaxLen, ErrOptions)
	}
	var cand []int
	for i, l := range lengths {
		if (opts.MaxLen == 0 || l <= opts.MaxLen) && (opts.MaxTotal == 0 || l+opts.Output[i] <= opts.MaxTotal) {
			cand = append(cand, i)
		}
	}
	sel := Selection{Candidates: len(cand), Excluded: len(lengths) - len(cand)}
	if n > len(cand) {
		limit := fmt.Sprintf("max length %d", opts.MaxLen)
		if opts.MaxTotal > 0 {
			limit = fmt.Sprintf("prompt + output %d", opts.MaxTotal)
			if opts.MaxLen > 0 {
				limit = fmt.Sprintf("max length %d or prompt + output %d", opts.MaxLen, opts.MaxTotal)
			}
		}
		return sel, fmt.Errorf("longbench: %d prompts requested but only %d records available (%d more exceed %s): %w",
			n, len(cand), sel.Excluded, limit, ErrNotEnough)
	}

	// Feasibility: the reachable means run from the n shortest to the n longest.
	if opts.TargetMean > 0 {
		sorted := make([]int, len(cand))
		for i, c := range cand {
			sorted[i] = lengths[c]
		}
		sort.Ints(sorted)
		var lo, hi int64
		for i := 0; i < n; i++ {
			lo += int64(sorted[i])
			hi += int64(sorted[len(sorted)-1-i])
		}
		minMean, maxMean := float64(lo)/float64(n), float64(hi)/float64(n)
		if minMean > float64(opts.TargetMean*(1+tol)) {
			return sel, fmt.Errorf("longbench: target mean %.1f is below the smallest achievable mean %.1f of %d prompts (min length %d): %w",
				opts.TargetMean, minMean, n, sorted[0], ErrUnreachable)
		}
		if maxMean < float64(opts.TargetMean*(1-tol)) {
			return sel, fmt.Errorf("longbench: target mean %.1f is above the largest achievable mean %.1f of %d prompts (max length %d): %w",
				opts.TargetMean, maxMean, n, sorted[len(sorted)-1], ErrUnreachable)
		}
	}

	// Seeded uniform sample: partial Fisher-Yates over the candidates.
	rng := NewSplitMix64(opts.Seed)
	perm := append([]int(nil), cand...)
	for i := 0; i < n; i++ {
		j := i + rng.IntN(len(perm)-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	chosen := perm[:n:n]
	sort.Ints(chosen)
	rest := perm[n:]

	if opts.TargetMean > 0 {
		swaps, ok := fitMean(lengths, chosen, rest, opts.TargetMean, tol)
		sel.Swaps = swaps
		if !ok {
			// Local search from the random sample got stuck (sparse lengths):
			// restart from the window of n consecutive sorted lengths whose
			// mean is closest to the target.
			chosen, rest = windowStart(lengths, cand, n, opts.TargetMean)
			swaps, ok = fitMean(lengths, chosen, rest, opts.TargetMean, tol)
			sel.Swaps += swaps
			sel.Fallback = true
		}
		if !ok {
			var sum int64
			for _, c := range chosen {
				sum += int64(lengths[c])
			}
			return sel, fmt.Errorf("longbench: no mix of %d prompts reaches mean %.1f within %.1f%% (best found %.1f): %w",
				n, opts.TargetMean, float64(tol*100), float64(sum)/float64(n), ErrUnreachable)
		}
		sort.Ints(chosen)
	}
	sel.Indices = chosen
	sel.Lengths = make([]int, n)
	for i, c := range chosen {
		sel.Lengths[i] = lengths[c]
	}
	sel.Stats = ComputeStats(sel.Lengths)
	return sel, nil
}

// fitMean swaps elements of chosen with elements of rest until the sum is
// within tol/2 of the target sum or no swap improves it; each swap is the one
// that brings the sum closest to the target. chosen and rest are modified in
// place. ok reports whether the final mean is within tol of target.
func fitMean(lengths, chosen, rest []int, target, tol float64) (swaps int, ok bool) {
	n := len(chosen)
	var sum int64
	for _, c := range chosen {
		sum += int64(lengths[c])
	}
	targetSum := float64(target * float64(n))
	goal := float64(targetSum*tol) / 2
	// rest sorted by (length, index) so each swap partner is a binary search.
	sort.Slice(rest, func(a, b int) bool {
		la, lb := lengths[rest[a]], lengths[rest[b]]
		if la != lb {
			return la < lb
		}
		return rest[a] < rest[b]
	})
	for {
		d := targetSum - float64(sum) // > 0: need longer prompts
		if math.Abs(d) <= goal || len(rest) == 0 {
			break
		}
		bestX, bestY := -1, -1
		bestErr := math.Abs(d)
		for xi, x := range chosen {
			lx := lengths[x]
			want := float64(lx) + d
			// first rest position with length >= want
			k := sort.Search(len(rest), func(i int) bool { return float64(lengths[rest[i]]) >= want })
			for _, yi := range [2]int{k - 1, k} {
				if yi < 0 || yi >= len(rest) {
					continue
				}
				ly := lengths[rest[yi]]
				if (d > 0 && ly <= lx) || (d < 0 && ly >= lx) {
					continue
				}
				// Among equal lengths take the lowest index: step to the
				// first of the run.
				for yi > 0 && lengths[rest[yi-1]] == ly {
					yi--
				}
				e := math.Abs(d - float64(ly-lx))
				if e < bestErr {
					bestErr, bestX, bestY = e, xi, yi
				}
			}
		}
		if bestX < 0 {
			break
		}
		x, y := chosen[bestX], rest[bestY]
		sum += int64(lengths[y] - lengths[x])
		chosen[bestX] = y
		// keep rest sorted: remove y, insert x
		rest = append(rest[:bestY], rest[bestY+1:]...)
		pos := sort.Search(len(rest), func(i int) bool {
			li := lengths[rest[i]]
			return li > lengths[x] || (li == lengths[x] && rest[i] > x)
		})
		rest = append(rest, 0)
		copy(rest[pos+1:], rest[pos:])
		rest[pos] = x
		swaps++
	}
	return swaps, math.Abs(targetSum-float64(sum)) <= float64(targetSum*tol)
}

// windowStart sorts the candidates by (length, index) and splits them into
// the first window of n consecutive ones whose mean is closest to target, and
// the rest.
func windowStart(lengths, cand []int, n int, target float64) (chosen, rest []int) {
	s := append([]int(nil), cand...)
	sort.Slice(s, func(a, b int) bool {
		la, lb := lengths[s[a]], lengths[s[b]]
		if la != lb {
			return la < lb
		}
		return s[a] < s[b]
	})
	var sum int64
	for _, c := range s[:n] {
		sum += int64(lengths[c])
	}
	targetSum := float64(target * float64(n))
	best, bestErr := 0, math.Abs(float64(sum)-targetSum)
	for i := 1; i+n <= len(s); i++ {
		sum += int64(lengths[s[i+n-1]] - lengths[s[i-1]])
		if e := math.Abs(float64(sum) - targetSum); e < bestErr {
			best, bestErr = i, e
		}
	}
	chosen = append([]int(nil), s[best:best+n]...)
	rest = append(append([]int(nil), s[:best]...), s[best+n:]...)
	sort.Ints(chosen)
	return chosen, rest
}

// Stats summarizes prompt lengths. Percentiles use the nearest-rank method:
// Pp is the smallest length with at least p% of lengths <= it.
type Stats struct {
	Count int     `json:"count"`
	Min   int     `json:"min"`
	P50   int     `json:"p50"`
	P90   int     `json:"p90"`
	Max   int     `json:"max"`
	Mean  float64 `json:"mean"`
	Total int64   `json:"total"`
}

// ComputeStats returns the statistics of lengths (zero Stats when empty).
func ComputeStats(lengths []int) Stats {
	if len(lengths) == 0 {
		return Stats{}
	}
	s := append([]int(nil), lengths...)
	sort.Ints(s)
	var total int64
	for _, l := range s {
		total += int64(l)
	}
	rank := func(p int) int { // ceil(p*n/100), at least 1
		r := (p*len(s) + 99) / 100
		if r < 1 {
			r = 1
		}
		return s[r-1]
	}
	return Stats{Count: len(s), Min: s[0], P50: rank(50), P90: rank(90), Max: s[len(s)-1],
		Mean: float64(total) / float64(len(s)), Total: total}
}

// String is a one-line summary.
func (s Stats) String() string {
	return fmt.Sprintf("n=%d min=%d p50=%d p90=%d max=%d mean=%.1f", s.Count, s.Min, s.P50, s.P90, s.Max, s.Mean)
}

// Histogram renders lengths as a text histogram with the given number of
// equal-width bins over [min, max] and bars at most width characters wide.
func Histogram(lengths []int, bins, width int) string {
	if len(lengths) == 0 || bins <= 0 || width <= 0 {
		return ""
	}
	st := ComputeStats(lengths)
	span := st.Max - st.Min + 1
	if bins > span {
		bins = span
	}
	binW := (span + bins - 1) / bins
	bins = (span + binW - 1) / binW // drop bins that would start past max
	counts := make([]int, bins)
	for _, l := range lengths {
		counts[(l-st.Min)/binW]++
	}
	peak := 0
	for _, c := range counts {
		peak = max(peak, c)
	}
	var b strings.Builder
	for i, c := range counts {
		lo := st.Min + i*binW
		hi := min(lo+binW-1, st.Max)
		bar := (c*width + peak - 1) / peak
		fmt.Fprintf(&b, "%7d-%-7d |%-*s| %d\n", lo, hi, width, strings.Repeat("#", bar), c)
	}
	return b.String()
}
