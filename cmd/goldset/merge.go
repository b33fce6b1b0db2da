package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/suite"
)

type mergeOptions struct {
	shards []string
	out    string
	jobs   int
}

func newMergeCmd(s *streams) *cobra.Command {
	var o mergeOptions
	cmd := &cobra.Command{
		Use:   "merge --out BUNDLE SHARD...",
		Short: "Join shard bundles made with 'gen --shard i/n' into one bundle",
		Long: `merge verifies every shard bundle, checks that shards 1..n of the same suite,
version and seed are all present once, and writes the joined bundle atomically.
The result is byte-identical to an unsharded build. Files are hard-linked
when the shards are on the same file system, else copied.`,
		Example: `  goldset merge --out out/stage2-paged shards/stage2-paged.shard-*-of-4`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.shards = args
			return runMerge(cmd.Context(), o, s.out)
		},
	}
	cmd.Flags().StringVarP(&o.out, "out", "o", "", "merged bundle directory (required)")
	cmd.Flags().IntVarP(&o.jobs, "jobs", "j", runtime.GOMAXPROCS(0), "files verified in parallel")
	cmd.MarkFlagRequired("out")
	return cmd
}

func runMerge(ctx context.Context, o mergeOptions, w io.Writer) error {
	m, err := suite.MergeBundles(o.shards, o.out, o.jobs)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "merged %d shards of %s %s: %d cases -> %s (digest %s)\n", len(o.shards), m.Suite, m.SuiteVersion, len(m.Cases), o.out, m.Digest)
	return nil
}
