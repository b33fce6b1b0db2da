package judge

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/goldset/goldset/manifests"
)

func bundle() *manifests.Manifest {
	return &manifests.Manifest{Suite: "t", Digest: "d", Cases: []manifests.Case{
		// 48 MB of bf16 traffic, 1 GFLOP: the H200 floor is the bandwidth
		// term, 48e6 / 4.8e12 s = 10 us.
		{ID: "mm", Op: "matmul", Work: &manifests.Work{BytesRead: 40e6, BytesWritten: 8e6, Flops: 1e9, FlopDType: "bfloat16"}},
		// compute bound: 1e12 flops at 989.5 TF dense = 1.0106 ms.
		{ID: "big", Op: "matmul", Work: &manifests.Work{BytesRead: 1e6, BytesWritten: 1e6, Flops: 1e12, FlopDType: "bfloat16"}},
		{ID: "old", Op: "matmul"},
		{ID: "ch.s1.unified_attention", Op: "unified_attention", Chain: &manifests.ChainRef{ID: "ch", Step: 1, Stage: 1}},
	}}
}

func TestFloorHandChecked(t *testing.T) {
	h200, _ := LookupProfile("h200")
	if got, want := h200.Floor(48e6, 1e9, "bfloat16"), 1e-5; math.Abs(got-want) > 1e-12 {
		t.Errorf("h200 bandwidth floor %g, want %g", got, want)
	}
	if got, want := h200.Floor(2e6, 1e12, "bfloat16"), 1e12/989.5e12; math.Abs(got-want) > 1e-12 {
		t.Errorf("h200 compute floor %g, want %g", got, want)
	}
	// float32 may run on TF32 tensor cores: the floor takes that rate.
	if got, want := h200.Floor(0, 1e12, "float32"), 1e12/494.5e12; math.Abs(got-want) > 1e-12 {
		t.Errorf("h200 fp32 floor %g, want %g", got, want)
	}
	// H200 has no FP4: the fastest rate it lists (FP8) bounds it.
	if got, want := h200.Floor(0, 1e12, "float4_e2m1fn_x2"), 1e12/1979e12; math.Abs(got-want) > 1e-12 {
		t.Errorf("h200 fp4 floor %g, want %g", got, want)
	}
	a, _ := LookupProfile("ascend910b")
	if got, want := a.Floor(1.2e12, 0, "float16"), 1/1.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("910b floor with slack %g, want %g", got, want)
	}
	if _, err := LookupProfile("a100"); !errors.Is(err, ErrProfile) {
		t.Errorf("unknown profile: %v", err)
	}
	for _, p := range Profiles {
		if p.Source == "" || p.BytesPerSec <= 0 || len(p.FlopsPerSec) == 0 {
			t.Errorf("profile %s incomplete", p.Name)
		}
	}
}

func timing(profile string, cases ...string) []byte {
	return []byte(fmt.Sprintf(`{"schema": "goldset-timing/1", "profile": %q, "cases": [%s]}`, profile, strings.Join(cases, ",")))
}

func TestJudgeRejectsImpossibleTime(t *testing.T) {
	// 20 us is honest on the H200 (floor 10 us); one iteration of 5 us is
	// impossible and fails the case.
	honest := `{"case": "mm", "times_ms": [0.021, 0.020, 0.022, 0.020, 0.019], "warmup": 3, "l2_flushed": true}`
	fake := `{"case": "mm", "times_ms": [0.021, 0.005, 0.022], "warmup": 3, "l2_flushed": true}`
	for _, tc := range []struct {
		name, profile, body string
		want                string
	}{
		{"honest", "h200", honest, "PASS"},
		{"fake", "h200", fake, "FAIL"},
		// 5 us: below the H200 floor, but above B200's 6 us? no: B200's
		// floor is 48e6/8e12 = 6 us, so 5 us fails there too; without a
		// profile the lowest floor (B200, 6 us) is enforced.
		{"fake-any", "", fake, "FAIL"},
		// 8 us is possible on a B200 (6 us) but not on an H200 (10 us).
		{"b200-only", "", `{"case": "mm", "times_ms": [0.008], "warmup": 0, "l2_flushed": true}`, "PASS"},
		{"b200-only-on-h200", "h200", `{"case": "mm", "times_ms": [0.008], "warmup": 0, "l2_flushed": true}`, "FAIL"},
	} {
		tm, err := ParseTiming(tc.name, timing(tc.profile, tc.body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Judge(bundle(), tm)
		if err != nil {
			t.Fatal(err)
		}
		if got := res[0].Status; got != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got, res[0].Reason, tc.want)
		}
		if tc.want == "FAIL" && !strings.Contains(res[0].Reason, "floor") {
			t.Errorf("%s: reason %q does not name the floor", tc.name, res[0].Reason)
		}
	}
}

func TestJudgeSummary(t *testing.T) {
	tm, err := ParseTiming("t", timing("h200", `{"case": "big", "times_ms": [2.0, 2.2, 2.1, 1.9, 2.0, 2.05, 3.5], "warmup": 1, "l2_flushed": false}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Judge(bundle(), tm)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.MedianMS != 2.05 || r.MinMS != 1.9 || r.Iterations != 7 {
		t.Errorf("median %g min %g n %d", r.MedianMS, r.MinMS, r.Iterations)
	}
	if !(r.CILowMS <= r.MedianMS && r.MedianMS <= r.CIHighMS && r.CILowMS >= 1.9 && r.CIHighMS <= 3.5) {
		t.Errorf("CI [%g, %g] around %g", r.CILowMS, r.CIHighMS, r.MedianMS)
	}
	// Seeded: the same interval every time.
	again, _ := Judge(bundle(), tm)
	if again[0].CILowMS != r.CILowMS || again[0].CIHighMS != r.CIHighMS {
		t.Error("bootstrap interval not reproducible")
	}
	// peak_fraction on the H200: floor 1.0106 ms / median 2.05 ms.
	if got, want := r.Profiles[0].PeakFraction, 1e12/989.5e12*1e3/2.05; math.Abs(got-want) > 1e-9 {
		t.Errorf("peak_fraction %g, want %g", got, want)
	}
	if got, want := r.FlopsPerSec, 1e12/2.05e-3; math.Abs(got-want) > 1 {
		t.Errorf("achieved %g FLOP/s, want %g", got, want)
	}
	if len(r.Warnings) == 0 {
		t.Error("no warning for an unflushed L2")
	}
}

func TestParseTimingErrors(t *testing.T) {
	for name, body := range map[string]string{
		"schema":     `{"schema": "x", "cases": [{"case": "mm", "times_ms": [1]}]}`,
		"unknown":    `{"schema": "goldset-timing/1", "extra": 1, "cases": [{"case": "mm", "times_ms": [1]}]}`,
		"empty":      `{"schema": "goldset-timing/1", "cases": []}`,
		"zero":       `{"schema": "goldset-timing/1", "cases": [{"case": "mm", "times_ms": [0]}]}`,
		"negative":   `{"schema": "goldset-timing/1", "cases": [{"case": "mm", "times_ms": [-1]}]}`,
		"no times":   `{"schema": "goldset-timing/1", "cases": [{"case": "mm", "times_ms": []}]}`,
		"twice":      `{"schema": "goldset-timing/1", "cases": [{"case": "mm", "times_ms": [1]}, {"case": "mm", "times_ms": [1]}]}`,
		"trailing":   `{"schema": "goldset-timing/1", "cases": [{"case": "mm", "times_ms": [1]}]} {}`,
		"profile":    `{"schema": "goldset-timing/1", "profile": "tpu", "cases": [{"case": "mm", "times_ms": [1]}]}`,
		"no id":      `{"schema": "goldset-timing/1", "cases": [{"times_ms": [1]}]}`,
		"not json":   `times`,
		"inf-ish":    `{"schema": "goldset-timing/1", "cases": [{"case": "mm", "times_ms": [1e999]}]}`,
		"neg warmup": `{"schema": "goldset-timing/1", "cases": [{"case": "mm", "times_ms": [1], "warmup": -1}]}`,
	} {
		if _, err := ParseTiming(name, []byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	tm, _ := ParseTiming("t", timing("", `{"case": "old", "times_ms": [1]}`))
	if _, err := Judge(bundle(), tm); err == nil || !strings.Contains(err.Error(), "no work") {
		t.Errorf("case without work: %v", err)
	}
	// A stage case of an old bundle (no work recorded): the same advice.
	tm, _ = ParseTiming("t", timing("", `{"case": "ch.s1.unified_attention", "times_ms": [1]}`))
	if _, err := Judge(bundle(), tm); err == nil || !strings.Contains(err.Error(), "regenerate") {
		t.Errorf("stage case: %v", err)
	}
	tm, _ = ParseTiming("t", timing("", `{"case": "nope", "times_ms": [1]}`))
	if _, err := Judge(bundle(), tm); err == nil {
		t.Error("unknown case accepted")
	}
}

func FuzzParseTiming(f *testing.F) {
	f.Add(timing("h200", `{"case": "mm", "times_ms": [0.02], "warmup": 1, "l2_flushed": true}`))
	f.Add([]byte(`{"schema": "goldset-timing/1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tm, err := ParseTiming("fuzz", b)
		if err != nil {
			return
		}
		if _, err := Judge(bundle(), tm); err != nil {
			return
		}
	})
}
