package serving

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Num is a float64 that encodes NaN (not recorded) as JSON null.
type Num float64

func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 10, 64), nil
}

// Known says the value was recorded or computed.
func (n Num) Known() bool { return !math.IsNaN(float64(n)) }

var nan = Num(math.NaN())

// Dist is one latency distribution in milliseconds.
type Dist struct {
	Metric string    `json:"metric"` // ttft, tpot, itl, e2el
	Source string    `json:"source"` // "per-request" (recomputed) or "recorded" (the file's summary)
	Count  int       `json:"count"`  // values behind the percentiles (0 when recorded)
	Mean   Num       `json:"mean_ms"`
	P50    Num       `json:"p50_ms"`
	P90    Num       `json:"p90_ms"`
	P99    Num       `json:"p99_ms"`
	Values []float64 `json:"-"` // sorted, ms; nil when recorded
}

// Summary is one run's figures.
type Summary struct {
	Result               string   `json:"result"`
	Run                  int      `json:"run"`
	Label                string   `json:"label"`
	Format               Format   `json:"format"`
	Kind                 Kind     `json:"kind"`
	Successes            int      `json:"successes"`
	Failures             int      `json:"failures"` // -1: not recorded
	Duration             Num      `json:"duration_s"`
	RequestThroughput    Num      `json:"request_throughput"`     // req/s
	OutputThroughput     Num      `json:"output_throughput"`      // tok/s
	TotalTokenThroughput Num      `json:"total_token_throughput"` // tok/s
	PeakConcurrency      int      `json:"peak_concurrency"`       // -1: not recorded
	MeanConcurrency      Num      `json:"mean_concurrency"`
	Latency              []Dist   `json:"latency"` // serving only
	Check                *Verdict `json:"check,omitempty"`
	// Accuracy is the run's LongBench score (Score) when the report was
	// given the workload's data and the file carries generated texts.
	Accuracy *Accuracy `json:"accuracy,omitempty"`
}

// Accuracy is what report shows of a ScoreReport: the mean over subsets and
// each subset's score.
type Accuracy struct {
	Version string           `json:"longbench_version"`
	Overall Num              `json:"overall"`
	Subsets []SubsetAccuracy `json:"subsets"`
	Note    string           `json:"note,omitempty"` // why the run was not scored
}

// SubsetAccuracy is one subset's LongBench score (null when unsupported).
type SubsetAccuracy struct {
	Subset string `json:"subset"`
	Score  Num    `json:"score"`
}

// AccuracyOf condenses a ScoreReport for Summary.Accuracy.
func AccuracyOf(r *ScoreReport) *Accuracy {
	a := &Accuracy{Version: r.Version, Overall: r.Overall, Subsets: []SubsetAccuracy{}}
	for _, s := range r.Subsets {
		a.Subsets = append(a.Subsets, SubsetAccuracy{Subset: s.Subset, Score: s.Score})
	}
	return a
}

// Metrics in report order.
var Metrics = []string{"ttft", "tpot", "itl", "e2el"}

func known(v float64) Num {
	if v == 0 {
		return nan
	}
	return Num(v)
}

// Summarize computes a run's figures: latency percentiles from the
// per-request data when the file has it (numpy's linear percentile, over
// successful requests, as vLLM does), else the file's recorded summary.
func Summarize(r *Result) Summary {
	s := Summary{Result: r.Path, Run: r.Run, Label: r.Label, Format: r.Format, Kind: r.Kind, Successes: r.Completed,
		Failures: r.Failed, Duration: known(r.Duration), RequestThroughput: known(r.RequestThroughput),
		OutputThroughput: known(r.OutputThroughput), TotalTokenThroughput: known(r.TotalTokenThroughput),
		PeakConcurrency: r.PeakConcurrency, MeanConcurrency: known(r.MeanConcurrency)}
	if r.Kind == Offline {
		return s
	}
	per := perRequest(r)
	for _, m := range Metrics {
		if vals, ok := per[m]; ok {
			s.Latency = append(s.Latency, dist(m, vals))
			continue
		}
		s.Latency = append(s.Latency, recorded(r, m))
	}
	return s
}

func perRequest(r *Result) map[string][]float64 {
	out := map[string][]float64{}
	if r.TTFTs == nil {
		return out
	}
	var ttft, tpot, itl, e2el []float64
	for i := range r.TTFTs {
		if !r.success(i) {
			continue
		}
		ttft = append(ttft, r.TTFTs[i]*1000)
		// Each list is absent (nil) or has one entry per request
		// (checkShapes); a file may carry ttfts without itls.
		if r.ITLs != nil {
			for _, x := range r.ITLs[i] {
				itl = append(itl, x*1000)
			}
		}
		if r.Latencies != nil {
			e2el = append(e2el, r.Latencies[i]*1000)
			if r.OutputLens == nil {
				continue
			}
			if o := r.OutputLens[i]; o > 1 {
				tpot = append(tpot, (r.Latencies[i]-r.TTFTs[i])/float64(o-1)*1000)
			}
		}
	}
	out["ttft"], out["itl"] = ttft, itl
	if r.Latencies != nil {
		out["e2el"], out["tpot"] = e2el, tpot
	}
	return out
}

func dist(metric string, vals []float64) Dist {
	sort.Float64s(vals)
	d := Dist{Metric: metric, Source: "per-request", Count: len(vals), Values: vals, Mean: nan, P50: nan, P90: nan, P99: nan}
	if len(vals) == 0 {
		return d
	}
	var sum float64
	for _, v := range vals {
		sum += v
	}
	d.Mean = Num(sum / float64(len(vals)))
	d.P50 = Num(percentileSorted(vals, 50))
	d.P90 = Num(percentileSorted(vals, 90))
	d.P99 = Num(percentileSorted(vals, 99))
	return d
}

// recorded reads a metric's statistics from the file's summary: vLLM writes
// mean_/median_/pNN_<m>_ms for --metric-percentiles; SGLang names E2EL
// "e2e_latency" and writes median and p99 only.
func recorded(r *Result, m string) Dist {
	d := Dist{Metric: m, Source: "recorded", Mean: nan, P50: nan, P90: nan, P99: nan}
	names := []string{m}
	if m == "e2el" {
		names = append(names, "e2e_latency")
	}
	get := func(prefix string) Num {
		for _, n := range names {
			if v, ok := r.Summary[prefix+"_"+n+"_ms"]; ok {
				return Num(v)
			}
		}
		return nan
	}
	d.Mean = get("mean")
	d.P50 = get("median")
	if p := get("p50"); p.Known() {
		d.P50 = p
	}
	d.P90 = get("p90")
	d.P99 = get("p99")
	return d
}

// Ratio is one metric of a run against the baseline's; Speedup > 1 means the
// run is better (higher throughput, lower latency).
type Ratio struct {
	Metric   string `json:"metric"`
	Baseline Num    `json:"baseline"`
	Value    Num    `json:"value"`
	Speedup  Num    `json:"speedup"`
}

// Comparison is a run set side by side with a baseline.
type Comparison struct {
	Baseline Summary   `json:"baseline"`
	Runs     []Summary `json:"runs"`
	Ratios   [][]Ratio `json:"ratios"` // per run, nil where not comparable
	Refused  []string  `json:"refused"`
}

// Compare puts runs beside the baseline. A run is ranked only when the
// baseline and the run both passed Check against the same workload digest and
// both are the same kind of measure.
func Compare(base Summary, runs []Summary) (*Comparison, error) {
	c := &Comparison{Baseline: base, Runs: runs, Ratios: make([][]Ratio, len(runs)), Refused: []string{}}
	if base.Check == nil || !base.Check.OK {
		return c, fmt.Errorf("%w: the baseline %s did not pass check against the workload", ErrNotComparable, base.Result)
	}
	for i, s := range runs {
		switch {
		case s.Kind != base.Kind:
			c.Refused = append(c.Refused, fmt.Sprintf("%s: %s result: never ranked against a %s one", s.Result, s.Kind, base.Kind))
			continue
		case s.Check == nil || !s.Check.OK:
			c.Refused = append(c.Refused, fmt.Sprintf("%s: did not pass check against the workload", s.Result))
			continue
		case s.Check.Digest != base.Check.Digest:
			c.Refused = append(c.Refused, fmt.Sprintf("%s: checked against workload %s, the baseline against %s", s.Result, s.Check.Digest, base.Check.Digest))
			continue
		}
		c.Ratios[i] = ratios(base, s)
	}
	if len(c.Refused) > 0 {
		return c, fmt.Errorf("%w: %d of %d runs refused", ErrNotComparable, len(c.Refused), len(runs))
	}
	return c, nil
}

func ratios(base, s Summary) []Ratio {
	var out []Ratio
	up := func(name string, b, v Num) {
		out = append(out, Ratio{name, b, v, div(v, b)})
	}
	down := func(name string, b, v Num) {
		out = append(out, Ratio{name, b, v, div(b, v)})
	}
	up("request_throughput", base.RequestThroughput, s.RequestThroughput)
	up("output_throughput", base.OutputThroughput, s.OutputThroughput)
	up("total_token_throughput", base.TotalTokenThroughput, s.TotalTokenThroughput)
	for i := range base.Latency {
		if i >= len(s.Latency) {
			break
		}
		b, v := base.Latency[i], s.Latency[i]
		down(b.Metric+"_p50_ms", b.P50, v.P50)
		down(b.Metric+"_p90_ms", b.P90, v.P90)
		down(b.Metric+"_p99_ms", b.P99, v.P99)
	}
	return out
}

func div(a, b Num) Num {
	if !a.Known() || !b.Known() || b == 0 {
		return nan
	}
	return a / b
}
