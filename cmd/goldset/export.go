package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/export"
	"github.com/goldset/goldset/manifests"
)

type exportOptions struct {
	bundle string
	format string
	out    string
	cases  []string
	json   bool
	quiet  bool
}

func newExportCmd(s *streams) *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export BUNDLE --format safetensors|flashinfer-trace|msopst --out DIR",
		Short: "Write a bundle's cases as safetensors, a FlashInfer Trace or msOpST cases",
		Long: `export writes the cases of a bundle in a format another tool reads, with
goldset's suite, version, seed, case record and sha256s carried along:

  safetensors       one <case>.safetensors per case (inputs, goldens, truth, aux),
                    the manifest's case record in __metadata__; for
                    safetensors.torch.load_file
  flashinfer-trace  a FlashInfer-Bench dataset: definitions/*.json,
                    workloads/*.jsonl, inputs and goldens as safetensors
                    under blob/; cases whose dtypes FlashInfer Trace cannot
                    name (uint8, float8_e8m0fnu, packed float4) are skipped
                    and listed
  msopst            per Ascend op type a msOpST case file (<Op>_case.json),
                    raw little-endian .bin tensors (bfloat16 as its bits) and
                    a result check (<Op>_goldset_check.json)

Every tensor is read through its sha256 check. The same bundle gives the same
bytes every run. DIR must not exist or be empty; the export is written beside
it and renamed into place when complete. 'goldset import DIR' proves every
exported tensor identical to the manifest's. Format details: docs/consumers.md.

Exit status: 0 on success, 2 for a bad flag or an unknown case, 3 when a bundle
file fails its sha256, 1 otherwise (DIR not empty, a --case the format cannot
hold, I/O).`,
		Example: `  goldset export out/stage1-basic --format safetensors --out export/st
  goldset export out/stage2-paged --format flashinfer-trace --out export/fib
  goldset export out/stage1-basic --format msopst --out export/ascend --case mm-odd-7x129x781-bf16`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.bundle = args[0]
			return runExport(cmd.Context(), o, s.out, s.err)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "", "safetensors, flashinfer-trace or msopst (required)")
	cmd.Flags().StringVar(&o.out, "out", "", "export directory: must not exist or be empty (required)")
	cmd.Flags().StringSliceVar(&o.cases, "case", nil, "export only these case ids (repeatable, comma-separated)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the result as JSON")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	markArgs(cmd, inputDir, "bundle")
	markPath(cmd, "format", notPath, "")
	markPath(cmd, "out", output, "")
	cmd.MarkFlagRequired("format")
	cmd.MarkFlagRequired("out")
	cmd.RegisterFlagCompletionFunc("case", completeBundleCases)
	cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"safetensors", "flashinfer-trace", "msopst"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func runExport(ctx context.Context, o exportOptions, w, errw io.Writer) error {
	f, err := export.ParseFormat(o.format)
	if err != nil {
		return usageError{err}
	}
	opts := export.Options{Bundle: o.bundle, Out: o.out, Format: f, Cases: o.cases}
	if !o.quiet && !o.json {
		opts.Progress = func(done, total int) { fmt.Fprintf(errw, "\rexport %s: case %d/%d", f, done, total) }
	}
	res, err := export.Export(ctx, opts)
	if opts.Progress != nil {
		fmt.Fprintln(errw)
	}
	switch {
	case errors.Is(err, export.ErrNoCase):
		return usageError{err}
	case errors.Is(err, manifests.ErrMismatch), errors.Is(err, manifests.ErrInvalid), errors.Is(err, manifests.ErrSchema):
		return failure{err}
	case err != nil:
		return err
	}
	if o.json {
		return writeJSON(w, res)
	}
	fmt.Fprintf(w, "exported %d case(s) of %s as %s: %d files, %d bytes -> %s\n", len(res.Cases), o.bundle, f, res.Files, res.Bytes, res.Out)
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "  skipped %s (%s): %s\n", s.Case, s.Op, s.Reason)
	}
	return nil
}

type importOptions struct {
	dir    string
	bundle string
	json   bool
}

func newImportCmd(s *streams) *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import DIR",
		Short: "Prove an export's tensors bit-identical to its source manifest",
		Long: `import reads an export written by 'goldset export' and checks it against the
manifest it carries (goldset-manifest.json): every tensor's data, rebuilt into
the .npy bytes goldset wrote, must have the manifest's sha256; every file must
have the sha256 the export's index lists; every tensor of every exported case
must be present, and nothing unlisted. With --bundle the source bundle's
manifest must be the carried one.

Exit status: 0 when everything matches, 3 listing every difference, 1 when DIR
is not an export or cannot be read.`,
		Example: `  goldset import export/st
  goldset import export/fib --bundle out/stage2-paged --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			return runImport(cmd.Context(), o, s.out)
		},
	}
	cmd.Flags().StringVar(&o.bundle, "bundle", "", "the source bundle: its manifest must be the one the export carries")
	markArgs(cmd, inputDir, "export")
	markPath(cmd, "bundle", inputDir, "bundle")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the result as JSON")
	return cmd
}

func runImport(ctx context.Context, o importOptions, w io.Writer) error {
	if _, err := os.Stat(o.dir); err != nil {
		return err
	}
	res, err := export.Import(ctx, export.ImportOptions{Dir: o.dir, Bundle: o.bundle})
	if err != nil {
		if errors.Is(err, manifests.ErrInvalid) || errors.Is(err, manifests.ErrSchema) {
			return failure{err}
		}
		return err
	}
	if o.json {
		if err := writeJSON(w, res); err != nil {
			return err
		}
	} else if res.OK {
		fmt.Fprintf(w, "OK %s: %s export of %s %s, %d cases, %d files, %d tensors identical to manifest %s\n", o.dir, res.Format, res.Suite, res.SuiteVersion, res.Cases, res.Files, res.Tensors, res.ManifestDigest)
	} else {
		fmt.Fprintf(w, "FAIL %s: %d problem(s)\n", o.dir, len(res.Problems))
		for _, p := range res.Problems {
			var at []string
			for _, s := range []string{p.Case, p.Tensor} {
				if s != "" {
					at = append(at, s)
				}
			}
			where := p.Path
			if len(at) > 0 {
				where += " [" + strings.Join(at, " ") + "]"
			}
			fmt.Fprintf(w, "  %s: %s\n", where, p.What)
		}
	}
	if !res.OK {
		return errFailed
	}
	return nil
}
