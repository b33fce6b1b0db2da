package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/goldset/goldset/suite"
)

// runGenVariants builds o.variants replay-proof variants of each --case of
// the one suite named (gen --variants N).
func runGenVariants(ctx context.Context, o genOptions, opts suite.Options, w, errw io.Writer) error {
	if o.variants < 1 || o.variants > suite.MaxVariants {
		return usagef("--variants %d: want 1..%d", o.variants, suite.MaxVariants)
	}
	if len(o.cases) == 0 {
		return usagef("--variants needs --case (the benchmark cases to vary)")
	}
	if len(opts.Secret) == 0 {
		return usagef("--variants needs a secret (--secret-file or $GOLDSET_HIDDEN_SECRET): the variants' inputs and sampled rows derive from it")
	}
	recipes, err := selectRecipes(o, opts)
	if err != nil {
		return err
	}
	if len(recipes) != 1 {
		return usagef("--variants needs exactly one suite")
	}
	r := recipes[0]
	for _, id := range o.cases {
		dir := filepath.Join(o.out, r.Name+".variants."+id)
		bw, err := createBundle(dir, r.Name+".variants", o.overwrite, errw)
		if err != nil {
			return err
		}
		bw.NoSync = o.noFsync
		pr := newProgress(errw, id+" variants", o.quiet)
		opts.Progress = pr.update
		m, err := suite.BuildVariants(ctx, r, id, o.variants, opts.Secret, bw, opts)
		pr.finish()
		if err == nil {
			err = bw.Commit(m)
		}
		if err != nil {
			bw.Abort()
			if errors.Is(err, suite.ErrVariants) {
				return usageError{err} // a case variants cannot take
			}
			return err
		}
		if o.json {
			if err := writeJSON(w, map[string]any{"ok": true, "dir": dir, "case": id, "variants": len(m.Cases), "digest": m.Digest}); err != nil {
				return err
			}
		} else if !o.quiet {
			fmt.Fprintf(w, "%s: %d variants of %s -> %s (digest %.16s)\n", r.Name, len(m.Cases), id, dir, m.Digest)
		}
	}
	return nil
}
