package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/judge"
	"github.com/goldset/goldset/manifests"
)

type timingResult struct {
	OK      bool               `json:"ok"`
	Bundle  string             `json:"bundle"`
	Timing  string             `json:"timing"`
	Profile string             `json:"profile,omitempty"`
	Device  string             `json:"device,omitempty"`
	Kernel  string             `json:"kernel,omitempty"`
	Cases   []judge.CaseResult `json:"cases"`
}

// runTiming judges o.timing against m (compare --timing) and prints it.
func runTiming(o compareOptions, m *manifests.Manifest, w io.Writer) error {
	res, err := judgeTiming(o, m)
	if err != nil {
		return err
	}
	if o.json {
		if err := writeJSON(w, res); err != nil {
			return err
		}
	} else {
		writeTimingText(w, *res)
	}
	if !res.OK {
		return errFailed
	}
	return nil
}

// judgeTiming reads and judges o.timing against m.
func judgeTiming(o compareOptions, m *manifests.Manifest) (*timingResult, error) {
	// A regular file only (a FIFO would block), size checked before reading:
	// an unreadable input, exit 1.
	b, err := safefile.ReadFile(o.timing, judge.MaxTimingBytes)
	if err != nil {
		return nil, fmt.Errorf("timing: %w", err)
	}
	t, err := judge.ParseTiming(o.timing, b)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if o.profile != "" {
		if _, err := judge.LookupProfile(o.profile); err != nil {
			return nil, usagef("--profile: %v", err)
		}
		t.Profile = o.profile
	}
	cases, err := judge.Judge(m, t)
	if err != nil {
		return nil, usagef("%s: %v", o.timing, err)
	}
	res := timingResult{OK: true, Bundle: o.bundle, Timing: o.timing, Profile: t.Profile, Device: t.Device, Kernel: t.Kernel, Cases: cases}
	for _, c := range cases {
		if c.Status != "PASS" {
			res.OK = false
		}
	}
	return &res, nil
}

func writeTimingText(w io.Writer, res timingResult) {
	fmt.Fprintf(w, "timing %s", res.Timing)
	if about := strings.TrimSpace(res.Device + " " + res.Kernel); about != "" {
		fmt.Fprintf(w, " (%s)", about) // both are optional in the file
	}
	fmt.Fprintf(w, " against %s\n", res.Bundle)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "case\top\tmedian ms [95%% CI]\tGB/s\tTFLOP/s\tpeak_fraction h200 b200 910b\tstatus\n")
	for _, c := range res.Cases {
		fmt.Fprintf(tw, "%s\t%s\t%.4g [%.4g, %.4g]\t%.1f\t%.2f\t", c.Case, c.Op, c.MedianMS, c.CILowMS, c.CIHighMS, c.BytesPerSec/1e9, c.FlopsPerSec/1e12)
		for _, p := range c.Profiles {
			fmt.Fprintf(tw, "%.3f ", p.PeakFraction)
		}
		fmt.Fprintf(tw, "\t%s\n", c.Status)
	}
	tw.Flush()
	for _, c := range res.Cases {
		if c.Reason != "" {
			fmt.Fprintf(w, "%s: %s\n", c.Case, c.Reason)
		}
		for _, m := range c.Warnings {
			fmt.Fprintf(w, "%s: warning: %s\n", c.Case, m)
		}
	}
}
