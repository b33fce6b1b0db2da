package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/manifests"
)

type verifyOptions struct {
	bundle     string
	json       bool
	jobs       int
	regenerate bool
	secretFile string
	quiet      bool
}

func newVerifyCmd(s *streams) *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify BUNDLE",
		Short: "Check that every file of a bundle is present and matches its manifest",
		Long: `verify checks, for every tensor of the bundle, that the file exists, that its
.npy header has the manifest's dtype and shape, and that its size and sha256
match; it also checks the manifest's digest. With --regenerate it rebuilds
every tensor from the manifest's recipe in memory and compares hashes too.
Tensor files must be regular files inside the bundle: links, FIFOs and
devices are reported, never followed or opened.
Exit status 3 lists what is wrong (a manifest that is not valid included).`,
		Example: `  goldset verify out/stage1-basic
  goldset verify out/stage2-paged --json
  goldset verify --regenerate out/stage1-basic`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.bundle = args[0]
			return runVerify(cmd.Context(), o, s.out, s.err)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the result as JSON")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	posIntVarP(cmd.Flags(), &o.jobs, "jobs", "j", runtime.GOMAXPROCS(0), "files hashed in parallel")
	cmd.Flags().BoolVar(&o.regenerate, "regenerate", false, "also regenerate every tensor from the recipe and compare hashes")
	cmd.Flags().StringVar(&o.secretFile, "secret-file", "", "secret for hidden cases (with --regenerate; or $GOLDSET_HIDDEN_SECRET)")
	markArgs(cmd, inputDir, "bundle")
	markPath(cmd, "secret-file", inputFile, "secret")
	return cmd
}

type verifyResult struct {
	Bundle   string              `json:"bundle"`
	Digest   string              `json:"digest"`
	Tensors  int                 `json:"tensors"`
	OK       bool                `json:"ok"`
	Problems []manifests.Problem `json:"problems"`
}

func runVerify(ctx context.Context, o verifyOptions, w, errw io.Writer) error {
	m, err := manifests.ReadManifest(o.bundle)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, safefile.ErrNotRegular) {
			return err // nothing to verify (no manifest, or a FIFO, link or directory in its place): an error, not a failed check
		}
		return failure{err}
	}
	dir := bundleDir(o.bundle)
	pr := newByteProgress(errw, "verify "+o.bundle, o.quiet || o.json)
	probs, err := manifests.VerifyContext(ctx, dir, m, o.jobs, pr.update)
	pr.finish()
	if err != nil {
		return err
	}
	if o.regenerate && len(probs) == 0 {
		rp, err := regenerateProblems(ctx, m, o.secretFile, o.jobs)
		if err != nil {
			return err
		}
		probs = append(probs, rp...)
	}
	n := 0
	for _, c := range m.Cases {
		n += len(c.Tensors)
	}
	res := verifyResult{Bundle: o.bundle, Digest: m.Digest, Tensors: n, OK: len(probs) == 0, Problems: probs}
	if res.Problems == nil {
		res.Problems = []manifests.Problem{}
	}
	if o.json {
		if err := writeJSON(w, res); err != nil {
			return err
		}
	} else if res.OK {
		fmt.Fprintf(w, "OK %s: %d cases, %d tensors, digest %s\n", o.bundle, len(m.Cases), n, m.Digest)
	} else {
		fmt.Fprintf(w, "FAIL %s: %d problem(s)\n", o.bundle, len(probs))
		for _, p := range probs {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	if !res.OK {
		return errFailed
	}
	return nil
}
