package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/goldset/goldset/manifests"
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
	switch {
	case opts.Shard.Count > 1:
		return usagef("--variants builds each case's variants whole: no --shard (nor $JOB_COMPLETION_INDEX/$SLURM_ARRAY_TASK_ID with $GOLDSET_SHARDS)")
	case opts.Compress:
		return usagef("--variants writes its tensors uncompressed: no --compress")
	}
	recipes, err := selectRecipes(o, opts)
	if err != nil {
		return err
	}
	if len(recipes) != 1 {
		return usagef("--variants needs exactly one suite")
	}
	r := recipes[0]
	if o.dryRun {
		for _, id := range o.cases {
			if !slices.ContainsFunc(r.Cases, func(c manifests.RecipeCase) bool { return c.ID == id }) {
				return usagef("suite %s has no case %q (goldset list %s --cases)", r.Name, id, r.Name)
			}
			dir := filepath.Join(o.out, r.Name+".variants."+id)
			if o.json {
				if err := writeJSON(w, map[string]any{"ok": true, "dry_run": true, "dir": dir, "case": id, "variants": o.variants}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "goldset: will write %s (%d variants of %s %s)\n", dir, o.variants, r.Name, id)
			}
		}
		return nil
	}
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
