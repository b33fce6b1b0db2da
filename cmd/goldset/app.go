package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes, mapped from errors in one place (exitCode). The table is in
// doc.go and the README.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitMismatch    = 3
	exitInterrupted = 130
)

// errFailed marks a verification or comparison that ran, failed and was
// reported by the command itself (exit 3, nothing more printed).
var errFailed = errors.New("check failed")

// usageError marks bad command-line use (exit 2): a bad flag or flag value,
// an unknown suite, case, split or output name, a missing argument.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// failure marks a check that failed on what it examined (exit 3) where the
// command has not printed a report: a manifest that is not valid, a shard
// failing its sha256, a candidate of the wrong shape or dtype.
type failure struct{ err error }

func (e failure) Error() string { return e.err.Error() }
func (e failure) Unwrap() error { return e.err }

// exitCode is the one place errors become exit codes.
func exitCode(err error) int {
	var ue usageError
	var fe failure
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, errFailed), errors.As(err, &fe):
		return exitMismatch
	}
	return exitError
}

// streams bundles the command's I/O so tests can capture it.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// jsonError is what every command prints on stdout for an error when --json
// is given (schema: the same snake_case style as the results).
type jsonError struct {
	OK       bool   `json:"ok"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error"`
}

// Main runs goldset with args and returns the process exit code.
func Main(ctx context.Context, args []string, in io.Reader, out, errw io.Writer) int {
	s := &streams{in: in, out: out, err: errw}
	root := newRootCmd(s)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errw)
	cmd, err := root.ExecuteContextC(ctx)
	code := exitCode(err)
	if err != nil && !errors.Is(err, errFailed) {
		msg := err.Error()
		if code == exitInterrupted {
			msg = "interrupted: " + strings.TrimSuffix(strings.TrimSuffix(msg, context.Canceled.Error()), ": ")
			msg = strings.TrimSuffix(msg, ": ") + " (nothing partial is left)"
		}
		fmt.Fprintf(errw, "goldset: %s\n", msg)
		if cmd != nil && wantsJSON(cmd) {
			b, _ := json.Marshal(jsonError{OK: false, ExitCode: code, Error: msg})
			fmt.Fprintf(out, "%s\n", b)
		}
	}
	return code
}

func wantsJSON(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("json")
	return f != nil && f.Value.String() == "true"
}

func newRootCmd(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "goldset",
		Short: "Reproducible inputs and golden outputs for LLM kernels",
		Long: `goldset builds fixed inputs and golden outputs for LLM-kernel contests (matmul,
online softmax, reshape_and_cache, GQA paged attention, Quest sparse attention,
unified (mixed-batch) attention and pipeline chains of them, DeepSeek sparse
attention, MXFP4) as bundles of .npy files with a manifest, and judges kernel
outputs against them; it also builds and checks LongBench serving workloads.

Exit codes:
  0    ok
  1    error (unreadable input, I/O failure, not enough disk space)
  2    usage: a bad flag or flag value, an unknown suite, case, split or output
       name, a misspelled subcommand
  3    a verification or comparison that failed (including a candidate of the
       wrong shape or dtype and a manifest that is not valid)
  130  interrupted (Ctrl-C or SIGTERM; a second Ctrl-C exits at once)`,
		Version:       toolVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(fmt.Sprintf("goldset {{.Version}} (%s, %s/%s)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH))
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
		newExportCmd(s),
		newImportCmd(s),
	)
	typeUsageErrors(root)
	return root
}

// typeUsageErrors makes cobra's own argument checks return usageError, so
// exitCode sees their type instead of matching message text: positional
// argument validators are wrapped, a command that only groups subcommands
// refuses unknown ones (cobra would print help and exit 0), and required
// flags are checked here rather than by cobra's untyped check.
func typeUsageErrors(c *cobra.Command) {
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = cobra.NoArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			cmd.Usage()
			return usagef("%s needs a subcommand (see %s --help)", cmd.CommandPath(), cmd.CommandPath())
		}
	}
	if v := c.Args; v != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := v(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	var required []string
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Annotations[cobra.BashCompOneRequiredFlag]; ok {
			required = append(required, f.Name)
			delete(f.Annotations, cobra.BashCompOneRequiredFlag)
		}
	})
	if len(required) > 0 {
		pre := c.PreRunE
		c.PreRunE = func(cmd *cobra.Command, args []string) error {
			for _, name := range required {
				if !cmd.Flags().Changed(name) {
					return usagef("required flag %q not set (--%s)", name, name)
				}
			}
			if pre != nil {
				return pre(cmd, args)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		typeUsageErrors(sub)
	}
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
	return markArgs(&cobra.Command{
		Use:   "version",
		Short: "Print goldset's version (also: goldset --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(s.out, "goldset %s (%s, %s/%s)\n", toolVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}, notPath, "")
}
