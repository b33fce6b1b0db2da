package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/manifests"
)

// MergeManifests joins shard manifests (any order) into the manifest of
// the unsharded bundle. Every shard 1..n must be present exactly once and
// agree on suite, version, seed, generator and hidden commitment.
func MergeManifests(shards []*manifests.Manifest) (*manifests.Manifest, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("suite: merge: %w: no shards given", ErrShard)
	}
	first := shards[0]
	n := 0
	byIndex := make(map[int]*manifests.Manifest)
	for _, s := range shards {
		i, c, err := parseShardField(s.Shard)
		if err != nil {
			return nil, fmt.Errorf("suite: merge: suite %s: %w", s.Suite, err)
		}
		if n == 0 {
			n = c
		}
		if c != n {
			return nil, fmt.Errorf("suite: merge: %w: shard %s does not belong to a split into %d", ErrShard, s.Shard, n)
		}
		if s.Suite != first.Suite || s.SuiteVersion != first.SuiteVersion || s.Seed != first.Seed ||
			s.Generator != first.Generator || s.SpecVersion != first.SpecVersion || s.HiddenCommitment != first.HiddenCommitment {
			return nil, fmt.Errorf("suite: merge: %w: shard %s is from %s %s seed %d, shard %s from %s %s seed %d",
				ErrShard, s.Shard, s.Suite, s.SuiteVersion, s.Seed, first.Shard, first.Suite, first.SuiteVersion, first.Seed)
		}
		if byIndex[i] != nil {
			return nil, fmt.Errorf("suite: merge: %w: shard %s given twice", ErrShard, s.Shard)
		}
		byIndex[i] = s
	}
	for i := 0; i < n; i++ {
		if byIndex[i] == nil {
			return nil, fmt.Errorf("suite: merge: %w: shard %d/%d is missing", ErrShard, i+1, n)
		}
	}
	out := *first
	out.Shard = ""
	out.Digest = ""
	out.Cases = nil
	out.Chains = nil
	// Shards hold recipe cases round-robin; a pipeline recipe case is the
	// run of its chain's stage cases, so the round-robin is over units.
	units := make([][][]manifests.Case, n)
	for i := 0; i < n; i++ {
		units[i] = recipeUnits(byIndex[i].Cases)
	}
	for k := 0; ; k++ {
		added := false
		for i := 0; i < n; i++ {
			if us := units[i]; k < len(us) {
				out.Cases = append(out.Cases, us[k]...)
				if r := us[k][0].Chain; r != nil {
					if ch := byIndex[i].ChainOf(r.ID); ch != nil { // else Validate below says so
						out.Chains = append(out.Chains, *ch)
					}
				}
				added = true
			}
		}
		if !added {
			break
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("suite: merge: %w", err)
	}
	return &out, nil
}

// recipeUnits splits a manifest's cases into the recipe cases they came
// from: a case alone, or the consecutive stage cases of one chain.
func recipeUnits(cs []manifests.Case) [][]manifests.Case {
	var out [][]manifests.Case
	for i := 0; i < len(cs); {
		j := i + 1
		if r := cs[i].Chain; r != nil {
			for j < len(cs) && cs[j].Chain != nil && cs[j].Chain.ID == r.ID {
				j++
			}
		}
		out = append(out, cs[i:j])
		i = j
	}
	return out
}

func parseShardField(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("%w: manifest is not a shard (shard field %q)", ErrShard, s)
	}
	return i - 1, n, nil
}

// ErrShardCorrupt is returned when a shard bundle fails verification.
var ErrShardCorrupt = errors.New("shard fails verification")

// ErrMergeTarget is returned when the merge target is, contains or lies
// inside one of the shards being merged.
var ErrMergeTarget = errors.New("merge target overlaps an input shard")

// MergeOptions configure MergeBundlesContext.
type MergeOptions struct {
	Jobs      int  // files verified in parallel
	Overwrite bool // replace an existing merged bundle of the same suite
	// Progress, when set, is called with the bytes verified and copied so
	// far and the total (each byte counts twice: verified, then placed).
	Progress func(done, total int64)
	// OnReplace, when set, is called before anything is written if an
	// existing bundle at out will be replaced.
	OnReplace func(old *manifests.Manifest)
}

// MergeBundles is MergeBundlesContext without cancellation or overwrite.
func MergeBundles(dirs []string, out string, jobs int) (*manifests.Manifest, error) {
	return MergeBundlesContext(context.Background(), dirs, out, MergeOptions{Jobs: jobs})
}

// MergeBundlesContext verifies each shard bundle and writes the merged
// bundle to out atomically. Files are hard-linked when possible, else
// copied; every file must be a regular file inside its shard (links are
// refused, never copied). out may not be one of the shards, nor contain one
// or lie inside one (ErrMergeTarget); an existing out is replaced only with
// Overwrite when it is a bundle of the same suite (manifests.Owned).
func MergeBundlesContext(ctx context.Context, dirs []string, out string, o MergeOptions) (*manifests.Manifest, error) {
	if err := checkMergeTarget(dirs, out); err != nil {
		return nil, err
	}
	var ms []*manifests.Manifest
	src := make(map[string]string) // tensor path -> shard dir
	var total, done int64
	for _, d := range dirs {
		m, err := manifests.ReadManifest(d)
		if err != nil {
			return nil, err
		}
		for _, c := range m.Cases {
			for _, t := range c.Tensors {
				total += 2 * t.Bytes
			}
		}
		ms = append(ms, m)
	}
	for i, d := range dirs {
		m := ms[i]
		base := done
		probs, err := manifests.VerifyContext(ctx, d, m, o.Jobs, func(n, _ int64) {
			if o.Progress != nil {
				o.Progress(base+n, total)
			}
		})
		if err != nil {
			return nil, err
		}
		if len(probs) > 0 {
			return nil, fmt.Errorf("suite: merge: shard %s: %w: %s (and %d more)", d, ErrShardCorrupt, probs[0], len(probs)-1)
		}
		for _, c := range m.Cases {
			for _, t := range c.Tensors {
				src[t.Path] = d
				done += t.Bytes
			}
		}
	}
	m, err := MergeManifests(ms)
	if err != nil {
		return nil, err
	}
	bw, err := manifests.CreateBundleWith(out, manifests.CreateOptions{Suite: m.Suite, Overwrite: o.Overwrite})
	if err != nil {
		return nil, err
	}
	defer bw.Abort()
	if bw.Replaces != nil && o.OnReplace != nil {
		o.OnReplace(bw.Replaces)
	}
	placed := make(map[string]bool)
	for _, c := range m.Cases {
		for _, t := range c.Tensors {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if placed[t.Path] {
				continue // a chain's file listed twice
			}
			placed[t.Path] = true
			if err := placeFile(src[t.Path], t.Path, filepath.Join(bw.Dir(), filepath.FromSlash(t.Path))); err != nil {
				return nil, fmt.Errorf("suite: merge: %w", err)
			}
			done += t.Bytes
			if o.Progress != nil {
				o.Progress(done, total)
			}
		}
	}
	if err := bw.Commit(m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkMergeTarget refuses an out that is, holds or lies in a shard.
func checkMergeTarget(dirs []string, out string) error {
	ao, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	oi, oerr := os.Stat(out)
	for _, d := range dirs {
		ad, err := filepath.Abs(bundleRoot(d))
		if err != nil {
			return err
		}
		if di, err := os.Stat(ad); err == nil && oerr == nil && os.SameFile(oi, di) {
			return fmt.Errorf("suite: merge: %w: --out %s is the shard %s", ErrMergeTarget, out, d)
		}
		if within(ao, ad) || within(ad, ao) {
			return fmt.Errorf("suite: merge: %w: --out %s and the shard %s contain one another", ErrMergeTarget, out, d)
		}
	}
	return nil
}

// bundleRoot is the bundle directory of a path naming it or its manifest.
func bundleRoot(p string) string {
	// Only a regular file is a manifest.json naming its bundle; a FIFO or a
	// link stays itself, so reading it fails naming it.
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		return filepath.Dir(p)
	}
	return p
}

func within(a, b string) bool {
	r, err := filepath.Rel(b, a)
	return err == nil && filepath.IsLocal(r) || a == b
}

// placeFile hard-links or copies the regular file rel of shard dir to to.
func placeFile(dir, rel, to string) error {
	in, err := safefile.OpenIn(bundleRoot(dir), rel) // refuses links, FIFOs, devices
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if err := os.Link(filepath.Join(bundleRoot(dir), filepath.FromSlash(rel)), to); err == nil {
		// Linked the file that was just checked, unless it was swapped
		// in between: compare identities.
		li, err1 := os.Lstat(to)
		fi, err2 := in.Stat()
		if err1 == nil && err2 == nil && os.SameFile(li, fi) {
			return nil
		}
		os.Remove(to)
	}
	outF, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(outF, in); err != nil {
		outF.Close()
		return err
	}
	if err := outF.Sync(); err != nil {
		outF.Close()
		return err
	}
	return outF.Close()
}
