package serving

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestPercentileNumpy(t *testing.T) {
	// numpy.percentile(..., method="linear") values, worked by hand:
	// [1,2,3,4] p90: pos 2.7 -> 3 + 0.7*(4-3) = 3.7.
	for _, tc := range []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{[]float64{4, 1, 3, 2}, 90, 3.7},
		{[]float64{4, 1, 3, 2}, 50, 2.5},
		{[]float64{15, 20, 35, 40, 50}, 40, 29},
		{[]float64{7}, 99, 7},
		{[]float64{1, 2}, 100, 2},
		{[]float64{1, 2}, 0, 1},
	} {
		if got := Percentile(tc.xs, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Percentile(%v, %g) = %g, want %g", tc.xs, tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("no data must be NaN")
	}
}

func TestPeakConcurrency(t *testing.T) {
	// [0,2) [1,3) [2,4): the first ends as the third starts, so 2 at once.
	if got := peakConcurrency([]float64{0, 1, 2}, []float64{2, 2, 2}, nil); got != 2 {
		t.Errorf("peak %d, want 2", got)
	}
	// A failed request does not count.
	if got := peakConcurrency([]float64{0, 0, 0}, []float64{1, 1, 1}, []string{"", "x", ""}); got != 2 {
		t.Errorf("peak %d, want 2", got)
	}
}

// TestSummarizeMatchesRecorded: percentiles recomputed from the per-request
// data of the vLLM sample equal the ones written beside them (computed with
// serve.py's formulas by the script that wrote the sample).
func TestSummarizeMatchesRecorded(t *testing.T) {
	r := mustResult(t, readTestdata(t, "vllm-serve-detailed.json"))
	s := Summarize(r)
	if len(s.Latency) != 4 {
		t.Fatalf("%d latency metrics", len(s.Latency))
	}
	for _, d := range s.Latency {
		if d.Source != "per-request" {
			t.Errorf("%s from %s", d.Metric, d.Source)
		}
		for p, v := range map[string]Num{"p50": d.P50, "p90": d.P90, "p99": d.P99, "mean": d.Mean} {
			want := r.Summary[p+"_"+d.Metric+"_ms"]
			if math.Abs(float64(v)-want) > 1e-9*math.Max(1, want) {
				t.Errorf("%s %s: recomputed %g, recorded %g", d.Metric, p, float64(v), want)
			}
		}
	}
	if s.PeakConcurrency != 4 || s.Successes != 4 || s.Failures != 0 {
		t.Errorf("summary %+v", s)
	}
	// SGLang's details have no per-request latency: TPOT and E2EL come from
	// the recorded summary, without p90.
	sg := Summarize(mustResult(t, readTestdata(t, "sglang-serving.jsonl")))
	for _, d := range sg.Latency {
		want := "per-request"
		if d.Metric == "tpot" || d.Metric == "e2el" {
			want = "recorded"
		}
		if d.Source != want {
			t.Errorf("sglang %s from %s, want %s", d.Metric, d.Source, want)
		}
	}
	if e := sg.Latency[3]; !e.P50.Known() || !e.P99.Known() || e.P90.Known() {
		t.Errorf("sglang e2el %+v", e)
	}
}

func TestCompareSideBySide(t *testing.T) {
	w := mustWorkload(t, readTestdata(t, "synth100/manifest.json"))
	dense := mustResult(t, consistentRun(w).JSON(1))
	sparse := mustResult(t, consistentRun(w).JSON(0.8))
	sum := func(r *Result) Summary {
		s := Summarize(r)
		s.Check = Check(w, r, CheckOptions{})
		return s
	}
	c, err := Compare(sum(dense), []Summary{sum(sparse)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Ratios[0] {
		// Every latency is 0.8x (TTFT and ITL scale exactly), so every
		// latency speed-up is 1.25; throughput grows by about as much.
		if strings.HasSuffix(r.Metric, "_ms") && math.Abs(float64(r.Speedup)-1.25) > 1e-9 {
			t.Errorf("%s speed-up %g, want 1.25", r.Metric, float64(r.Speedup))
		}
		if strings.HasSuffix(r.Metric, "throughput") && (r.Speedup < 1.2 || r.Speedup > 1.26) {
			t.Errorf("%s speed-up %g", r.Metric, float64(r.Speedup))
		}
	}
	// A run that fails check is not ranked.
	bad := consistentRun(w)
	bad.In[0] += 8
	c, err = Compare(sum(dense), []Summary{sum(mustResult(t, bad.JSON(0.8)))})
	if !errors.Is(err, ErrNotComparable) || c.Ratios[0] != nil || !strings.Contains(c.Refused[0], "did not pass check") {
		t.Errorf("failing run ranked: %v %v", err, c.Refused)
	}
	// Offline against serving is refused even when both pass.
	off := mustResult(t, []byte(`{"elapsed_time": 10, "num_requests": 100, "total_num_tokens": `+i64(w.TotalPromptTokens()+w.TotalMaxNewTokens())+`, "requests_per_second": 10, "tokens_per_second": 1}`))
	c, err = Compare(sum(dense), []Summary{sum(off)})
	if !errors.Is(err, ErrNotComparable) || !strings.Contains(c.Refused[0], "offline result: never ranked against a serving one") {
		t.Errorf("offline ranked against serving: %v %v", err, c.Refused)
	}
	// Runs checked against different workloads are refused.
	w2 := mustWorkload(t, readTestdata(t, "workload/manifest.json"))
	other := mustResult(t, readTestdata(t, "vllm-serve-detailed.json"))
	o := Summarize(other)
	o.Check = Check(w2, other, CheckOptions{})
	if _, err := Compare(sum(dense), []Summary{o}); !errors.Is(err, ErrNotComparable) {
		t.Error("runs of two workloads ranked")
	}
}

func TestSVG(t *testing.T) {
	w := mustWorkload(t, readTestdata(t, "synth100/manifest.json"))
	runs := []Summary{Summarize(mustResult(t, consistentRun(w).JSON(1))), Summarize(mustResult(t, consistentRun(w).JSON(0.8))),
		Summarize(mustResult(t, readTestdata(t, "sglang-serving.jsonl")))}
	runs[0].Result, runs[1].Result = "dense.json", "sparse.json"
	var b bytes.Buffer
	if err := WriteSVG(&b, runs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "<polyline") != 2*4+2 { // two runs x 4 metrics, SGLang's TTFT and ITL
		t.Errorf("%d curves", strings.Count(out, "<polyline"))
	}
	golden(t, "latency.svg", b.Bytes())
}
