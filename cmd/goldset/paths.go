package main

import (
	"github.com/spf13/cobra"
)

// Every flag and positional argument that names a file or directory says
// so here, in one vocabulary: inputs_test.go walks the command tree, fails
// on a path-like flag that is not marked, and feeds every marked input a
// FIFO, a symbolic link and a directory. Inputs are read through
// internal/safefile (regular files only, size-limited where the format has
// a natural limit).

const (
	annPath = "goldset_path" // flag annotation: []string{kind, fixture}
	annArgs = "goldset_args" // command annotation: "kind fixture" or "none"
)

// Path kinds.
const (
	inputFile = "input-file" // a file read whole or streamed: regular files only
	inputDir  = "input-dir"  // a directory read (bundle, workload, data); bundles and workloads also take their manifest.json
	output    = "output"     // written, never read
	notPath   = "none"       // a name that looks like a path flag but is not one
)

// markPath records what flag of cmd names; fixture says what a valid value
// is (the walk test's fixture key). Files also get cobra's completion hint;
// directories do not (most also take their manifest.json).
func markPath(cmd *cobra.Command, flag, kind, fixture string) {
	f := cmd.Flags().Lookup(flag)
	if f == nil {
		panic("markPath: no flag --" + flag + " on " + cmd.Name())
	}
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[annPath] = []string{kind, fixture}
	if kind == inputFile || kind == output {
		cmd.MarkFlagFilename(flag)
	}
}

// markArgs records what cmd's positional arguments name.
func markArgs(cmd *cobra.Command, kind, fixture string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annArgs] = kind + " " + fixture
	if kind == notPath {
		cmd.Annotations[annArgs] = notPath
	}
	return cmd
}
