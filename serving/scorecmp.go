package serving

import (
	"fmt"
	"slices"
	"sort"

	"github.com/goldset/goldset/longbench"
)

// BootstrapOptions set the paired bootstrap of ScoreDelta.
type BootstrapOptions struct {
	Resamples int    // default 10000
	Seed      uint64 // SplitMix64 seed; default 1
	Level     float64
}

func (o BootstrapOptions) withDefaults() BootstrapOptions {
	if o.Resamples <= 0 {
		o.Resamples = 10000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = 0.95
	}
	return o
}

// Delta is a run's score minus the baseline's on one subset (or "overall",
// the mean over subsets), in LongBench points, with a paired bootstrap
// confidence interval of the difference of means.
type Delta struct {
	Subset   string  `json:"subset"`
	N        int     `json:"n"` // prompts scored in both runs
	Baseline Num     `json:"baseline"`
	Run      Num     `json:"run"`
	Delta    Num     `json:"delta"`
	Mean     float64 `json:"mean_delta"` // 100 x mean(run_i - base_i), unrounded
	Lo       Num     `json:"ci_lo"`
	Hi       Num     `json:"ci_hi"`
}

// ScoreDeltas compares two runs scored against the same workload: per
// supported subset, run - baseline (the rounded LongBench scores) and a
// paired bootstrap CI: o.Resamples times, for each subset in report order,
// draw N prompt indices with replacement (SplitMix64(o.Seed), Lemire's
// bounded integers: longbench.SplitMix64.IntN) and take 100 x the mean of
// run_i - base_i over them (v2: per-request accuracy); the interval is the
// (1-level)/2 and (1+level)/2 quantiles of those means, numpy's linear
// percentile. "overall" uses the same draws: the mean over subsets of the
// resampled subset deltas.
func ScoreDeltas(base, run *ScoreReport, o BootstrapOptions) ([]Delta, error) {
	o = o.withDefaults()
	if base.Digest != run.Digest || len(base.Requests) != len(run.Requests) {
		return nil, fmt.Errorf("%w: scored against different workloads (%s, %s)", ErrNotComparable, base.Digest, run.Digest)
	}
	type sub struct {
		name     string
		b, r     Num
		diffs    []float64
		resample []float64
	}
	var subs []*sub
	runBy := map[string]SubsetScore{}
	for _, s := range run.Subsets {
		runBy[s.Subset] = s
	}
	for _, bs := range base.Subsets {
		rs, ok := runBy[bs.Subset]
		if !ok || bs.Unsupported != "" || rs.Unsupported != "" {
			continue
		}
		s := &sub{name: bs.Subset, b: bs.Score, r: rs.Score}
		for _, i := range bs.idx {
			if run.Requests[i].Ran && !run.Requests[i].Skipped && !base.Requests[i].Skipped {
				s.diffs = append(s.diffs, run.Requests[i].Score-base.Requests[i].Score)
			}
		}
		if len(s.diffs) > 0 {
			subs = append(subs, s)
		}
	}
	if len(subs) == 0 {
		return nil, fmt.Errorf("%w: no supported subset scored in both runs", ErrNotComparable)
	}
	rng := longbench.NewSplitMix64(o.Seed)
	overall := make([]float64, o.Resamples)
	for b := range o.Resamples {
		var acc float64
		for _, s := range subs {
			n := len(s.diffs)
			var sum float64
			for range n {
				sum += s.diffs[rng.IntN(n)]
			}
			m := 100 * sum / float64(n)
			s.resample = append(s.resample, m)
			acc += m
		}
		overall[b] = acc / float64(len(subs))
	}
	lo, hi := 100*(1-o.Level)/2, 100*(1+o.Level)/2
	var out []Delta
	var sb, sr, sm float64
	var nAll int
	for _, s := range subs {
		var sum float64
		for _, d := range s.diffs {
			sum += d
		}
		sort.Float64s(s.resample)
		d := Delta{Subset: s.name, N: len(s.diffs), Baseline: s.b, Run: s.r, Delta: Num(pyRound(float64(s.r-s.b), 2)),
			Mean: 100 * sum / float64(len(s.diffs)),
			Lo:   Num(percentileSorted(s.resample, lo)), Hi: Num(percentileSorted(s.resample, hi))}
		out = append(out, d)
		sb, sr, sm, nAll = sb+float64(s.b), sr+float64(s.r), sm+d.Mean, nAll+d.N
	}
	sort.Float64s(overall)
	k := float64(len(subs))
	out = append(out, Delta{Subset: "overall", N: nAll, Baseline: Num(pyRound(sb/k, 2)), Run: Num(pyRound(sr/k, 2)),
		Delta: Num(pyRound(sr/k-sb/k, 2)), Mean: sm / k,
		Lo: Num(percentileSorted(overall, lo)), Hi: Num(percentileSorted(overall, hi))})
	return out, nil
}

// Divergence is one prompt's greedy agreement between two runs.
type Divergence struct {
	CustomID  string `json:"custom_id"`
	Subset    string `json:"subset"`
	Identical bool   `json:"identical"`
	// First is the index of the first unit that differs (the shorter
	// length when one output is a prefix of the other); -1 when identical.
	First int `json:"first_divergence"`
	LenA  int `json:"len_baseline"`
	LenB  int `json:"len_run"`
}

// Agreement is the greedy agreement of two runs of one workload.
type Agreement struct {
	Unit      string       `json:"unit"` // "token ids (recorded)", "Qwen3 tokens (re-encoded text)" or "characters (Unicode code points)"
	Compared  int          `json:"compared"`
	Identical int          `json:"identical"`
	Share     Num          `json:"share_identical"`
	MedianDiv Num          `json:"median_first_divergence"` // over the diverging prompts
	MinDiv    int          `json:"min_first_divergence"`    // -1 when none diverge
	PerSubset []SubsetAgr  `json:"per_subset"`
	Requests  []Divergence `json:"requests"`
	Notes     []string     `json:"notes"`
}

// SubsetAgr is the share of identical outputs within one subset.
type SubsetAgr struct {
	Subset    string `json:"subset"`
	Compared  int    `json:"compared"`
	Identical int    `json:"identical"`
	Share     Num    `json:"share_identical"`
}

// Encoder turns text into token ids (the Qwen3 tokenizer).
type Encoder interface{ Encode(string) []int }

// GreedyAgreement compares the texts of two runs prompt by prompt (both
// matched to w, both succeeded). Units: the recorded token ids when both
// runs recorded them; else enc's tokens of the texts when enc is not nil
// (re-encoding can merge differently from what was generated); else
// Unicode code points. Meaningful only at temperature 0; a note says when
// a run's temperature is not recorded as 0.
func GreedyAgreement(w *Workload, base, run *Generations, baseRep, runRep *ScoreReport, enc Encoder) *Agreement {
	a := &Agreement{MinDiv: -1, PerSubset: []SubsetAgr{}, Requests: []Divergence{}, Notes: []string{}}
	for _, g := range []*Generations{base, run} {
		if g.Temperature != "0" && g.Temperature != "0.0" {
			t := g.Temperature
			if t == "" {
				t = "not recorded"
			}
			a.Notes = append(a.Notes, fmt.Sprintf("%s: temperature %s (greedy agreement assumes 0; the workload's commands pass --temperature 0)", g.Path, t))
		}
	}
	useIDs := base.TokenIDs != nil && run.TokenIDs != nil
	switch {
	case useIDs:
		a.Unit = "token ids (recorded)"
	case enc != nil:
		a.Unit = "Qwen3 tokens (re-encoded text)"
	default:
		a.Unit = "characters (Unicode code points)"
	}
	bAt := inverse(baseRep.entry, w.N())
	rAt := inverse(runRep.entry, w.N())
	subs := map[string]*SubsetAgr{}
	var order []string
	var divs []float64
	for i, p := range w.Prompts {
		kb, kr := bAt[i], rAt[i]
		if kb < 0 || kr < 0 || base.failed(kb) || run.failed(kr) {
			continue
		}
		sameText := base.Texts[kb] == run.Texts[kr]
		var x, y []int
		switch {
		case useIDs:
			x, y = base.TokenIDs[kb], run.TokenIDs[kr]
		case enc != nil:
			x = enc.Encode(base.Texts[kb])
			y = x // equal texts encode equally: one encode, not two
			if !sameText {
				y = enc.Encode(run.Texts[kr])
			}
		default:
			x = runesOf(base.Texts[kb])
			y = x
			if !sameText {
				y = runesOf(run.Texts[kr])
			}
		}
		d := Divergence{CustomID: p.CustomID, Subset: p.Subset, First: -1, LenA: len(x), LenB: len(y)}
		d.Identical = sameText && (!useIDs || slices.Equal(x, y))
		if !d.Identical {
			d.First = firstDiff(x, y)
			divs = append(divs, float64(d.First))
			if a.MinDiv < 0 || d.First < a.MinDiv {
				a.MinDiv = d.First
			}
		}
		a.Requests = append(a.Requests, d)
		s := subs[p.Subset]
		if s == nil {
			s = &SubsetAgr{Subset: p.Subset}
			subs[p.Subset] = s
			order = append(order, p.Subset)
		}
		s.Compared++
		a.Compared++
		if d.Identical {
			s.Identical++
			a.Identical++
		}
	}
	a.Share, a.MedianDiv = nan, nan
	if a.Compared > 0 {
		a.Share = Num(float64(a.Identical) / float64(a.Compared))
	}
	if len(divs) > 0 {
		sort.Float64s(divs)
		a.MedianDiv = Num(percentileSorted(divs, 50))
	}
	for _, k := range order {
		s := subs[k]
		s.Share = Num(float64(s.Identical) / float64(s.Compared))
		a.PerSubset = append(a.PerSubset, *s)
	}
	return a
}

func inverse(idx []int, n int) []int {
	at := make([]int, n)
	for i := range at {
		at[i] = -1
	}
	for k, i := range idx {
		at[i] = k
	}
	return at
}

func runesOf(s string) []int {
	out := make([]int, 0, len(s))
	for _, r := range s {
		out = append(out, int(r))
	}
	return out
}

func firstDiff(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
