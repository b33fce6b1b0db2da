package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

type mergeOptions struct {
	shards    []string
	out       string
	jobs      int
	overwrite bool
	quiet     bool
	json      bool
}

func newMergeCmd(s *streams) *cobra.Command {
	var o mergeOptions
	cmd := &cobra.Command{
		Use:   "merge --out BUNDLE SHARD...",
		Short: "Join shard bundles made with 'gen --shard i/n' into one bundle",
		Long: `merge verifies every shard bundle, checks that shards 1..n of the same suite,
version and seed are all present once, and writes the joined bundle atomically.
The result is byte-identical to an unsharded build. Files are hard-linked
when the shards are on the same file system, else copied; a link, FIFO or
device inside a shard is refused, never copied.

--out may not be one of the shards (nor contain one). An existing --out is
replaced only with --overwrite, and only when it is a bundle of the same
suite holding nothing else.

Exit status: 0 merged, 3 a shard fails verification or its manifest is not
valid, 2 usage, 1 other errors.`,
		Example: `  goldset merge --out out/stage2-paged shards/stage2-paged.shard-*-of-4
  goldset merge --out out/stage2-paged --overwrite shards/stage2-paged.shard-*-of-4`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.shards = args
			return runMerge(cmd.Context(), o, s.out, s.err)
		},
	}
	cmd.Flags().StringVarP(&o.out, "out", "o", "", "merged bundle directory (required)")
	posIntVarP(cmd.Flags(), &o.jobs, "jobs", "j", runtime.GOMAXPROCS(0), "files verified in parallel")
	cmd.Flags().BoolVar(&o.overwrite, "overwrite", false, "replace an existing merged bundle of the same suite")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the result as JSON")
	cmd.MarkFlagRequired("out")
	markArgs(cmd, inputDir, "shard")
	markPath(cmd, "out", output, "")
	return cmd
}

func runMerge(ctx context.Context, o mergeOptions, w, errw io.Writer) error {
	pr := newByteProgress(errw, "merge", o.quiet)
	m, err := suite.MergeBundlesContext(ctx, o.shards, o.out, suite.MergeOptions{
		Jobs: o.jobs, Overwrite: o.overwrite, Progress: pr.update,
		OnReplace: func(old *manifests.Manifest) {
			fmt.Fprintf(errw, "goldset: --overwrite: %s (%s %s) will be replaced when the merged bundle is complete\n", o.out, old.Suite, old.SuiteVersion)
		},
	})
	pr.finish()
	switch {
	case errors.Is(err, suite.ErrMergeTarget), errors.Is(err, suite.ErrShard):
		// The arguments do not name one complete set of shards.
		return usageError{err}
	case errors.Is(err, suite.ErrShardCorrupt), errors.Is(err, manifests.ErrInvalid), errors.Is(err, manifests.ErrSchema):
		return failure{err}
	case err != nil:
		return err
	}
	n, total := tensorTotals(m)
	if o.json {
		return writeJSON(w, bundleSummary{OK: true, Suite: m.Suite, Version: m.SuiteVersion, Bundle: o.out, Digest: m.Digest, Cases: len(m.Cases), Tensors: n, Bytes: total})
	}
	fmt.Fprintf(w, "merged %d shards of %s %s: %d cases -> %s (digest %s)\n", len(o.shards), m.Suite, m.SuiteVersion, len(m.Cases), o.out, m.Digest)
	return nil
}
