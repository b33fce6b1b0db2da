package main

import (
	"context"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/diff"
)

type diffOptions struct {
	old, new    string
	json        bool
	jobs        int
	valuesLimit int64
}

func newDiffCmd(s *streams) *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Show what changed between two versions of a bundle",
		Long: `diff compares two bundles: the manifest fields (suite and spec version, seed,
generator, digest), then per case and tensor: unchanged (same sha256; its
file is not read), added, removed, or changed, with what changed (shape,
dtype, tolerance, params by key path) and, where dtype and shape agree, the
values: elements changed and their share, max abs and rel change, first and
worst changed index. Tensors are read chunk by chunk, so multi-GB bundles
diff in bounded memory. diff trusts unchanged files: run 'goldset verify' to
check them.

After a spec change: edit the recipe, bump its version, 'goldset gen' into a
new directory, 'goldset diff' against the old bundle, review, publish.

Exit status: 0 when identical, 3 when they differ, 1 on error.`,
		Example: `  goldset diff old/stage2-paged out/stage2-paged
  goldset diff old/stage1-basic out/stage1-basic --json > changes.json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.old, o.new = args[0], args[1]
			return runDiff(cmd.Context(), o, s.out)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the report as JSON")
	posIntVarP(cmd.Flags(), &o.jobs, "jobs", "j", runtime.GOMAXPROCS(0), "tensors compared in parallel")
	cmd.Flags().Int64Var(&o.valuesLimit, "values-limit", 0, "skip value comparison for files larger than this many bytes (0: no limit, -1: never compare values)")
	markArgs(cmd, inputDir, "bundle")
	return cmd
}

// diffResult is diff's --json document: "ok" (the bundles are identical)
// first, as in every command's JSON, then the report's fields.
type diffResult struct {
	OK bool `json:"ok"`
	*diff.Report
}

func runDiff(ctx context.Context, o diffOptions, w io.Writer) error {
	rep, err := diff.Bundles(ctx, bundleDir(o.old), bundleDir(o.new), diff.Options{Jobs: o.jobs, ValuesLimit: o.valuesLimit})
	if err != nil {
		return err
	}
	if o.json {
		if err := writeJSON(w, diffResult{OK: rep.Identical(), Report: rep}); err != nil {
			return err
		}
	} else if err := rep.WriteText(w); err != nil {
		return err
	}
	if !rep.Identical() {
		return errFailed
	}
	return nil
}
