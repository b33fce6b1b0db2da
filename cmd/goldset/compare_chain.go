package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

type compareChainResult struct {
	OK     bool   `json:"ok"`
	Bundle string `json:"bundle"`
	compare.ChainVerdict
}

// chainCandidates maps "stage-case/output" to a candidate file: the
// --output specs, then the files of dir.
func chainCandidates(m *manifests.Manifest, chain string, specs []string, dir string, partial bool) (map[string]string, error) {
	graded := map[string]bool{}
	var all []string
	for _, c := range m.ChainCases(chain) {
		for _, name := range suite.GradedOutputs(c) {
			graded[c.ID+"/"+name] = true
			all = append(all, c.ID+"/"+name)
		}
	}
	files := map[string]string{}
	for _, spec := range specs {
		key, file, ok := strings.Cut(spec, "=")
		if !ok || key == "" || file == "" || !strings.Contains(key, "/") {
			return nil, usagef("--output %q: want STAGE-CASE/NAME=FILE.npy with --chain", spec)
		}
		if !graded[key] {
			return nil, usagef("chain %s has no graded output %q (stage-case/output)", chain, key)
		}
		if files[key] != "" {
			return nil, usagef("--output %s given twice", key)
		}
		files[key] = file
	}
	if dir != "" {
		// A missing directory or a FIFO/file in its place is an unreadable
		// input (exit 1), named as what it is.
		if err := safefile.Dir(dir); err != nil {
			return nil, fmt.Errorf("--dir: %w", err)
		}
		for _, key := range all {
			if files[key] != "" {
				continue
			}
			p := filepath.Join(dir, filepath.FromSlash(key)+".npy")
			// A stage-case directory reached through a link is refused, as
			// a bundle's case directory is: no candidate is read via links.
			if fi, err := os.Lstat(filepath.Dir(p)); err == nil && !fi.IsDir() {
				return nil, fmt.Errorf("--dir: %s is %s, not a directory (goldset reads no candidate through a link: name its target, or copy it)", filepath.Dir(p), safefile.Kind(fi.Mode()))
			}
			if _, err := os.Lstat(p); err == nil {
				files[key] = p
			}
		}
	}
	var missing []string
	for _, key := range all {
		if files[key] == "" {
			missing = append(missing, key)
		}
	}
	if len(missing) == len(all) {
		return nil, usagef("no candidate given for chain %s (--dir DIR holding <stage-case>/<output>.npy, or --output STAGE-CASE/NAME=FILE)", chain)
	}
	if len(missing) > 0 && !partial {
		more := ""
		if len(missing) > 4 {
			more = fmt.Sprintf(" and %d more", len(missing)-4)
			missing = missing[:4]
		}
		return nil, usagef("chain %s: no candidate for %s%s (or pass --partial to judge only some)", chain, strings.Join(missing, ", "), more)
	}
	return files, nil
}

func runCompareChain(ctx context.Context, o compareOptions, w, errw io.Writer) error {
	m, err := readJudgedManifest(o.bundle)
	if err != nil {
		return err
	}
	if _, err := suite.LookupChain(m, o.chain); err != nil {
		return usagef("%s: %v", o.bundle, err)
	}
	files, err := chainCandidates(m, o.chain, o.outputs, o.dir, o.partial)
	if err != nil {
		return err
	}
	dir := bundleDir(o.bundle)
	get := func(c *manifests.Case, name string) ([]float64, error) {
		file := files[c.ID+"/"+name]
		if file == "" {
			return nil, nil
		}
		gt := c.Tensor(name)
		return compare.ReadCandidate(ctx, file, gt.DType, gt.Shape, nil)
	}
	v, err := suite.JudgeChain(dir, m, o.chain, get)
	if errors.Is(err, manifests.ErrMismatch) {
		return failure{fmt.Errorf("the bundle's reference cannot be trusted: %w", err)}
	}
	if err != nil {
		return err
	}
	if o.json {
		if err := writeJSON(w, compareChainResult{OK: v.OK(), Bundle: o.bundle, ChainVerdict: v}); err != nil {
			return err
		}
	} else if err := v.WriteText(w); err != nil {
		return err
	}
	if !v.OK() {
		return errFailed
	}
	return nil
}
