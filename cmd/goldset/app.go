package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes, mapped in one place (exitCode).
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitMismatch = 3
)

// errFailed marks a verification or comparison that ran and failed (exit 3).
var errFailed = errors.New("check failed")

// usageError marks bad command-line use (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFailed):
		return exitMismatch
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitError
}

// streams bundles the command's I/O so tests can capture it.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// Main runs goldset with args and returns the process exit code.
func Main(ctx context.Context, args []string, in io.Reader, out, errw io.Writer) int {
	s := &streams{in: in, out: out, err: errw}
	root := newRootCmd(s)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errw)
	err := root.ExecuteContext(ctx)
	if err != nil && !errors.Is(err, errFailed) {
		fmt.Fprintf(errw, "goldset: %v\n", err)
	}
	if err != nil && isCobraUsage(err) {
		return exitUsage
	}
	return exitCode(err)
}

// isCobraUsage recognises cobra's own argument errors, which it returns as plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func newRootCmd(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "goldset",
		Short: "Reproducible inputs and golden outputs for LLM kernels",
		Long: `goldset builds fixed inputs and golden outputs for LLM-kernel contests (matmul,
online softmax, reshape_and_cache, GQA paged attention, Quest sparse attention)
as bundles of .npy files with a manifest, and judges kernel outputs against them.

Exit codes: 0 ok, 1 error, 2 usage, 3 a verification or comparison that failed.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newVersionCmd(s),
		newInspectCmd(s),
		newVerifyCmd(s),
		newGenCmd(s),
		newListCmd(s),
		newMergeCmd(s),
		newCompareCmd(s),
		newDiffCmd(s),
		newNegativesCmd(s),
		newLongbenchCmd(s),
		newTokenizeCmd(s),
		newServingCmd(s),
	)
	return root
}

// toolVersion returns the module version and VCS revision from build info.
func toolVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, dirty string
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			rev = st.Value
		case "vcs.modified":
			if st.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && v == "(devel)" {
		return v + " " + rev + dirty
	}
	return v
}

func newVersionCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print goldset's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(s.out, "goldset %s (%s, %s/%s)\n", toolVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
