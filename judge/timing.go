package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/goldset/goldset/manifests"
)

// Sentinel errors.
var (
	ErrTiming  = errors.New("invalid timing file")
	ErrProfile = errors.New("unknown device profile")
)

// TimingSchema is the schema string a timing file carries.
const TimingSchema = "goldset-timing/1"

// MaxTimingBytes caps a timing file read from disk.
const MaxTimingBytes = 16 << 20

// maxIterations caps the timed iterations of one case.
const maxIterations = 1 << 20

// Timing is the file the Python judge writes (docs/spec.md §13b).
type Timing struct {
	Schema string `json:"schema"`
	// BundleDigest, when given, must be the bundle's manifest digest.
	BundleDigest string `json:"bundle_digest,omitempty"`
	// Profile names the device profile the kernel ran on; the floor is
	// enforced against it. Empty: against the lowest floor of all.
	Profile string      `json:"profile,omitempty"`
	Device  string      `json:"device,omitempty"` // free text (torch.cuda.get_device_name)
	Kernel  string      `json:"kernel,omitempty"` // free text
	Cases   []CaseTimes `json:"cases"`
}

// CaseTimes are one case's timed iterations.
type CaseTimes struct {
	Case string `json:"case"`
	// TimesMS are the per-iteration kernel times in milliseconds, warm-up
	// excluded.
	TimesMS []float64 `json:"times_ms"`
	Warmup  int       `json:"warmup"`
	// L2Flushed: the L2 cache was flushed before every timed iteration
	// (otherwise inputs that fit in L2 may exceed the HBM bandwidth).
	L2Flushed bool `json:"l2_flushed"`
	// Variants: iteration i ran on replay-proof input variant i.
	Variants bool `json:"variants,omitempty"`
}

// ParseTiming decodes and validates a timing file's bytes (name is used
// in errors).
func ParseTiming(name string, b []byte) (*Timing, error) {
	if len(b) > MaxTimingBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than %d", ErrTiming, name, len(b), MaxTimingBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Timing
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrTiming, name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: %s: data after the JSON object", ErrTiming, name)
	}
	if t.Schema != TimingSchema {
		return nil, fmt.Errorf("%w: %s: schema %q, want %q", ErrTiming, name, t.Schema, TimingSchema)
	}
	if t.Profile != "" {
		if _, err := LookupProfile(t.Profile); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(t.Cases) == 0 {
		return nil, fmt.Errorf("%w: %s: no cases", ErrTiming, name)
	}
	seen := map[string]bool{}
	for i, c := range t.Cases {
		switch {
		case c.Case == "":
			return nil, fmt.Errorf("%w: %s: cases[%d] has no case id", ErrTiming, name, i)
		case seen[c.Case]:
			return nil, fmt.Errorf("%w: %s: case %s appears twice", ErrTiming, name, c.Case)
		case len(c.TimesMS) == 0 || len(c.TimesMS) > maxIterations:
			return nil, fmt.Errorf("%w: %s: case %s has %d times, want 1..%d", ErrTiming, name, c.Case, len(c.TimesMS), maxIterations)
		case c.Warmup < 0:
			return nil, fmt.Errorf("%w: %s: case %s has warmup %d", ErrTiming, name, c.Case, c.Warmup)
		}
		seen[c.Case] = true
		for j, v := range c.TimesMS {
			if !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: %s: case %s times_ms[%d] = %v, want a finite time > 0", ErrTiming, name, c.Case, j, v)
			}
		}
	}
	return &t, nil
}

// ProfileResult is a case's timing against one device profile.
type ProfileResult struct {
	Profile string `json:"profile"`
	// FloorMS is max(bytes/bandwidth, flops/peak) / slack.
	FloorMS float64 `json:"floor_ms"`
	// PeakFraction is the roofline fraction at the median time:
	// max(bytes/bandwidth, flops/peak) / median (slack not applied).
	PeakFraction float64 `json:"peak_fraction"`
	// BandwidthFraction is achieved / peak bandwidth; FlopFraction is
	// achieved / peak FLOP/s when the profile lists the work's dtype.
	BandwidthFraction float64  `json:"bandwidth_fraction"`
	FlopFraction      *float64 `json:"flop_fraction,omitempty"`
	// BelowFloor counts iterations faster than FloorMS.
	BelowFloor int `json:"below_floor"`
	// Enforced: this profile's floor decides the status.
	Enforced bool `json:"enforced"`
}

// CaseResult is one case's timing judgement.
type CaseResult struct {
	Case       string         `json:"case"`
	Op         string         `json:"op"`
	Work       manifests.Work `json:"work"`
	Iterations int            `json:"iterations"`
	MinMS      float64        `json:"min_ms"`
	MedianMS   float64        `json:"median_ms"`
	// CILowMS and CIHighMS bound the median: a 95% percentile bootstrap
	// interval over BootstrapResamples resamples, seeded by the case id.
	CILowMS  float64 `json:"ci_low_ms"`
	CIHighMS float64 `json:"ci_high_ms"`
	// BytesPerSec and FlopsPerSec are achieved at the median.
	BytesPerSec float64         `json:"bytes_per_sec"`
	FlopsPerSec float64         `json:"flops_per_sec"`
	Profiles    []ProfileResult `json:"profiles"`
	Status      string          `json:"status"` // PASS or FAIL
	Reason      string          `json:"reason,omitempty"`
	Warnings    []string        `json:"warnings,omitempty"`
}

// BootstrapResamples is the number of bootstrap resamples of the median.
const BootstrapResamples = 2000

// Judge judges every case of t against the bundle's manifest m: each time
// must not be below the enforced floor (t.Profile's, else the lowest of
// all profiles: a time no listed device can reach).
func Judge(m *manifests.Manifest, t *Timing) ([]CaseResult, error) {
	if t.BundleDigest != "" && t.BundleDigest != m.Digest {
		return nil, fmt.Errorf("%w: timing file is for bundle digest %s, the bundle has %s", ErrTiming, t.BundleDigest, m.Digest)
	}
	var out []CaseResult
	for _, ct := range t.Cases {
		c := m.Case(ct.Case)
		if c == nil {
			return nil, fmt.Errorf("%w: case %s is not in the bundle", ErrTiming, ct.Case)
		}
		if c.Work == nil {
			// Every case, pipeline stage cases included, records work
			// since stage4-steps 1.1.0: a case without is from an older
			// bundle.
			return nil, fmt.Errorf("%w: case %s records no work (a bundle made before goldset recorded it; regenerate it)", ErrTiming, ct.Case)
		}
		out = append(out, judgeCase(c, ct, t.Profile))
	}
	return out, nil
}

func judgeCase(c *manifests.Case, ct CaseTimes, enforced string) CaseResult {
	w := *c.Work
	ts := slices.Clone(ct.TimesMS)
	slices.Sort(ts)
	med := median(ts)
	lo, hi := bootstrapCI(ts, ct.Case)
	r := CaseResult{Case: c.ID, Op: c.Op, Work: w, Iterations: len(ts), MinMS: ts[0], MedianMS: med, CILowMS: lo, CIHighMS: hi,
		BytesPerSec: float64(w.BytesRead+w.BytesWritten) / (med * 1e-3), FlopsPerSec: float64(w.Flops) / (med * 1e-3), Status: "PASS"}
	if !ct.L2Flushed {
		r.Warnings = append(r.Warnings, "the L2 cache was not flushed between iterations: inputs that fit in L2 can beat the HBM bandwidth")
	}
	// The enforced profile: the named one, else the one of the lowest floor.
	bytes := w.BytesRead + w.BytesWritten
	enf := enforced
	if enf == "" {
		low := math.Inf(1)
		for _, p := range Profiles {
			if f := p.Floor(bytes, w.Flops, w.FlopDType); f < low {
				low, enf = f, p.Name
			}
		}
	}
	for _, p := range Profiles {
		floor := p.Floor(bytes, w.Flops, w.FlopDType) * 1e3
		pr := ProfileResult{Profile: p.Name, FloorMS: floor, PeakFraction: floor * max(p.Slack, 1) / med,
			BandwidthFraction: r.BytesPerSec / p.BytesPerSec, Enforced: p.Name == enf}
		if pk, ok := p.Peak(w.FlopDType); ok && w.Flops > 0 {
			f := r.FlopsPerSec / pk
			pr.FlopFraction = &f
		}
		for _, v := range ts {
			if v < floor {
				pr.BelowFloor++
			}
		}
		if pr.Enforced && pr.BelowFloor > 0 {
			r.Status = "FAIL"
			r.Reason = fmt.Sprintf("%d of %d iterations faster than the %s floor %.4g ms (fastest %.4g ms) = max(%d bytes / %.3g B/s, %d %s flops / %.3g FLOP/s)%s: impossible on that device; the kernel skipped work or the timing is wrong",
				pr.BelowFloor, len(ts), p.Name, floor, ts[0], bytes, p.BytesPerSec, w.Flops, w.FlopDType, p.floorPeak(w.FlopDType), slackNote(p))
		}
		r.Profiles = append(r.Profiles, pr)
	}
	return r
}

func slackNote(p Profile) string {
	if p.Slack > 1 {
		return fmt.Sprintf(" / slack %g", p.Slack)
	}
	return ""
}

// median of sorted values.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// bootstrapCI is the 95% percentile bootstrap interval of the median of
// sorted values, seeded by the case id (reproducible).
func bootstrapCI(s []float64, id string) (lo, hi float64) {
	h := fnv.New64a()
	h.Write([]byte(id))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x676f6c64736574)) // "goldset"
	// Large samples get fewer resamples (the cost is resamples * n log n).
	meds := make([]float64, max(100, min(BootstrapResamples, 20_000_000/len(s))))
	buf := make([]float64, len(s))
	for i := range meds {
		for j := range buf {
			buf[j] = s[rng.IntN(len(s))]
		}
		slices.Sort(buf)
		meds[i] = median(buf)
	}
	slices.Sort(meds)
	return meds[int(0.025*float64(len(meds)))], meds[int(math.Ceil(0.975*float64(len(meds))))-1]
}
