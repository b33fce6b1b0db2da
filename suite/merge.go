package suite

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
	for k := 0; ; k++ {
		added := false
		for i := 0; i < n; i++ {
			if cs := byIndex[i].Cases; k < len(cs) {
				out.Cases = append(out.Cases, cs[k])
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

func parseShardField(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("%w: manifest is not a shard (shard field %q)", ErrShard, s)
	}
	return i - 1, n, nil
}

// MergeBundles verifies each shard bundle and writes the merged bundle to
// out atomically. Files are hard-linked when possible, else copied.
func MergeBundles(dirs []string, out string, jobs int) (*manifests.Manifest, error) {
	var ms []*manifests.Manifest
	src := make(map[string]string) // tensor path -> shard dir
	for _, d := range dirs {
		m, err := manifests.ReadManifest(d)
		if err != nil {
			return nil, err
		}
		if probs := manifests.Verify(d, m, jobs); len(probs) > 0 {
			return nil, fmt.Errorf("suite: merge: shard %s fails verification: %s (and %d more)", d, probs[0], len(probs)-1)
		}
		for _, c := range m.Cases {
			for _, t := range c.Tensors {
				src[t.Path] = d
			}
		}
		ms = append(ms, m)
	}
	m, err := MergeManifests(ms)
	if err != nil {
		return nil, err
	}
	bw, err := manifests.CreateBundle(out)
	if err != nil {
		return nil, err
	}
	defer bw.Abort()
	for _, c := range m.Cases {
		for _, t := range c.Tensors {
			from := filepath.Join(src[t.Path], filepath.FromSlash(t.Path))
			to := filepath.Join(bw.Dir(), filepath.FromSlash(t.Path))
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return nil, err
			}
			if err := os.Link(from, to); err != nil {
				if err := copyFile(from, to); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := bw.Commit(m); err != nil {
		return nil, err
	}
	return m, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
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
