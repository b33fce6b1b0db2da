package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

type listOptions struct {
	suites []string
	json   bool
	cases  bool
	ops    bool
}

func newListCmd(s *streams) *cobra.Command {
	var o listOptions
	cmd := &cobra.Command{
		Use:   "list [SUITE...]",
		Short: "List the embedded suites, their versions and cases with sizes",
		Example: `  goldset list
  goldset list stage2-paged --cases
  goldset list --json
  goldset list --ops --json     # every op with its inputs and outputs`,
		ValidArgsFunction: completeSuites,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.suites = args
			return runList(cmd.Context(), o, s.out)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&o.cases, "cases", false, "list every case")
	cmd.Flags().BoolVar(&o.ops, "ops", false, "list the ops the suites are built from, with their inputs and outputs")
	markArgs(cmd, notPath, "")
	return cmd
}

type listCase struct {
	ID    string `json:"id"`
	Op    string `json:"op"`
	Split string `json:"split"`
	Bytes int64  `json:"bytes"`
}

type listSuite struct {
	Name        string     `json:"name"`
	Version     string     `json:"version"`
	Description string     `json:"description"`
	Default     bool       `json:"default"`
	Bytes       int64      `json:"bytes"`
	Splits      []string   `json:"splits"`
	Cases       []listCase `json:"cases"`
}

// listResult and opsResult are list's --json documents: "ok" first, as in
// every command's JSON, then the suites or the op table.
type listResult struct {
	OK     bool        `json:"ok"`
	Suites []listSuite `json:"suites"`
}

type opsResult struct {
	OK  bool           `json:"ok"`
	Ops []suite.OpInfo `json:"ops"`
	// Margins: each tolerance family's nearest wrong algorithm (spec §13c).
	Margins []suite.Margin `json:"margins"`
}

func runList(ctx context.Context, o listOptions, w io.Writer) error {
	if o.ops {
		if len(o.suites) > 0 || o.cases {
			return usagef("--ops lists every op: it takes no SUITE and no --cases")
		}
		return listOps(o, w)
	}
	all, err := manifests.Suites()
	if err != nil {
		return err
	}
	var rs []*manifests.Recipe
	if len(o.suites) == 0 {
		rs = all
	} else {
		for _, n := range o.suites {
			r, err := manifests.LookupSuite(n)
			if err != nil {
				return usageError{err}
			}
			rs = append(rs, r)
		}
	}
	var out []listSuite
	for _, r := range rs {
		ls := listSuite{Name: r.Name, Version: r.Version, Description: r.Description, Default: r.Default}
		seen := map[string]bool{}
		for _, c := range r.Cases {
			n, err := suite.EstimateBytes(c)
			if err != nil {
				return fmt.Errorf("suite %s: %w", r.Name, err)
			}
			ls.Cases = append(ls.Cases, listCase{ID: c.ID, Op: c.Op, Split: c.Split, Bytes: n})
			ls.Bytes += n
			if !seen[c.Split] {
				seen[c.Split] = true
				ls.Splits = append(ls.Splits, c.Split)
			}
		}
		out = append(out, ls)
	}
	if o.json {
		return writeJSON(w, listResult{OK: true, Suites: out})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUITE\tVERSION\tCASES\tSIZE\tSPLITS")
	for _, s := range out {
		fmt.Fprintf(tw, "%s\t%s\t%d\t~%s\t%v\n", s.Name, s.Version, len(s.Cases), humanBytes(s.Bytes), s.Splits)
	}
	tw.Flush()
	if o.cases {
		for _, s := range out {
			fmt.Fprintf(w, "\n%s %s: %s\n", s.Name, s.Version, s.Description)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			for _, c := range s.Cases {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t~%s\n", c.ID, c.Op, c.Split, humanBytes(c.Bytes))
			}
			tw.Flush()
		}
	}
	return nil
}

// listOps prints the op table (suite.OpTable): scripts read the op names
// and tensor names from here instead of hard-coding them.
func listOps(o listOptions, w io.Writer) error {
	ops := suite.OpTable()
	margins, err := suite.Margins()
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(w, opsResult{OK: true, Ops: ops, Margins: margins})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OP\tINPUTS\tOUTPUTS (tolerance family)")
	for _, op := range ops {
		var outs []string
		for _, t := range op.Outputs {
			outs = append(outs, t.Name+" ("+t.Tolerance+")")
		}
		for _, a := range op.Aux {
			outs = append(outs, a+" (aux)")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", op.Name, strings.Join(op.Inputs, " "), strings.Join(outs, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeMargins(w, margins)
}

// writeMargins prints each family's discrimination margin: the nearest
// wrong algorithm's err/bound (exact and set families: any difference
// fails), and the families below suite.WeakMargin.
func writeMargins(w io.Writer, margins []suite.Margin) error {
	fmt.Fprintf(w, "\nDiscrimination margins (nearest wrong algorithm's err/bound, tiny and shipped-like cases):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAMILY\tDTYPE\tMARGIN\tNEAREST WRONG ALGORITHM")
	var weak []string
	for _, m := range margins {
		if m.Exact {
			fmt.Fprintf(tw, "%s\t%s\texact\tany difference fails\n", m.Family, m.DType)
			continue
		}
		ratio := fmt.Sprintf("%.3gx", float64(m.Ratio))
		if math.IsInf(float64(m.Ratio), 1) {
			ratio = "no allowance" // numeric equality: any change fails
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s (%s %s %s)\n", m.Family, m.DType, ratio, m.Control, m.Op, m.Case, m.Output)
		if m.Weak {
			weak = append(weak, fmt.Sprintf("%s/%s (%s at %.3gx)", m.Family, m.DType, m.Control, float64(m.Ratio)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(weak) > 0 {
		fmt.Fprintf(w, "weak (margin below %dx): %s\n", suite.WeakMargin, strings.Join(weak, ", "))
	}
	return nil
}
