package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/manifests"
)

type inspectOptions struct {
	bundle string
	json   bool
	caseID string
}

func newInspectCmd(s *streams) *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect BUNDLE",
		Short: "Show a bundle's cases, tensors, shapes, dtypes, sizes and tolerances",
		Example: `  goldset inspect out/stage1-basic
  goldset inspect out/stage2-paged --case pa-edge-g4-bf16
  goldset inspect out/stage1-basic/manifest.json --json | jq '.cases[].id'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.bundle = args[0]
			return runInspect(cmd.Context(), o, s.out)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the manifest as JSON")
	cmd.Flags().StringVar(&o.caseID, "case", "", "show only this case")
	cmd.RegisterFlagCompletionFunc("case", completeBundleCases)
	markArgs(cmd, inputDir, "bundle")
	return cmd
}

func runInspect(ctx context.Context, o inspectOptions, w io.Writer) error {
	m, err := manifests.ReadManifest(o.bundle)
	if err != nil {
		return err
	}
	cases := m.Cases
	if o.caseID != "" {
		c := m.Case(o.caseID)
		if c == nil {
			return usagef("bundle %s has no case %q", o.bundle, o.caseID)
		}
		cases = []manifests.Case{*c}
	}
	if o.json {
		mm := *m
		mm.Cases = cases
		b, err := mm.Marshal()
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	_, total := tensorTotals(m)
	fmt.Fprintf(w, "suite    %s %s (spec %d, %s, seed %d)\n", m.Suite, m.SuiteVersion, m.SpecVersion, m.Generator, m.Seed)
	if m.Shard != "" {
		fmt.Fprintf(w, "shard    %s\n", m.Shard)
	}
	fmt.Fprintf(w, "digest   %s\n", m.Digest)
	fmt.Fprintf(w, "cases    %d, %s in tensors\n", len(m.Cases), humanBytes(total))
	if p := m.Provenance; p != nil {
		fmt.Fprintf(w, "made by  %s %s on %s %s\n", p.Tool, p.Version, p.GOARCH, p.Created)
	}
	for _, c := range cases {
		fmt.Fprintf(w, "\n%s  op=%s split=%s\n", c.ID, c.Op, c.Split)
		if r := c.Chain; r != nil {
			fmt.Fprintf(w, "  chain  %s step %d stage %d (goldset compare --chain %s)\n", r.ID, r.Step, r.Stage, r.ID)
		}
		if len(c.Params) > 0 {
			fmt.Fprintf(w, "  params %s\n", compactJSON(c.Params))
		}
		if len(c.Info) > 0 {
			fmt.Fprintf(w, "  info   %s\n", compactJSON(c.Info))
		}
		if wk := c.Work; wk != nil {
			fmt.Fprintf(w, "  work   read %s, written %s, %d %s flops\n", humanBytes(wk.BytesRead), humanBytes(wk.BytesWritten), wk.Flops, wk.FlopDType)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, t := range c.Tensors {
			tol := ""
			if len(t.Tolerance) > 0 {
				tol = compactJSON(t.Tolerance)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%v\t%s\t%s\n", t.Name, t.Role, t.DType, t.Shape, humanBytes(t.Bytes), tol)
		}
		tw.Flush()
	}
	return nil
}

func compactJSON(b json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	s := buf.String()
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
