package manifests

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/goldset/goldset/internal/safefile"
)

// CreateOptions say what an existing target of CreateBundleWith may be.
type CreateOptions struct {
	// Suite is the suite being written: an existing target must be a
	// bundle of this suite (any version) to be replaced.
	Suite string
	// Overwrite allows replacing such a bundle at all.
	Overwrite bool
}

// Owned proves that dir is a goldset bundle of suite: its manifest.json
// parses as a goldset manifest of that suite, and every entry under dir is
// that manifest, a tensor file the manifest lists, or a directory on the way
// to one, none of them a link, FIFO or device. It returns the manifest, or an
// error wrapping ErrNotBundle that names the first thing that does not
// belong. Nothing is followed or opened except manifest.json.
func Owned(dir, suite string) (*Manifest, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("manifests: %s is %s: %w", dir, safefile.Kind(fi.Mode()), ErrNotBundle)
	}
	m, err := ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("manifests: %s: %w (its manifest.json: %v)", dir, ErrNotBundle, err)
	}
	if m.Suite != suite {
		return nil, fmt.Errorf("manifests: %s: %w: it holds suite %q, not %q", dir, ErrNotBundle, m.Suite, suite)
	}
	files := map[string]bool{"manifest.json": true}
	dirs := map[string]bool{}
	for _, c := range m.Cases {
		for _, t := range c.Tensors {
			files[t.Path] = true
			for d := path.Dir(t.Path); d != "."; d = path.Dir(d) {
				dirs[d] = true
			}
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir() && dirs[rel]:
			return nil
		case t.IsRegular() && files[rel]:
			return nil
		case t.IsDir(), t.IsRegular():
			return fmt.Errorf("%s is not part of the bundle", p)
		default:
			return fmt.Errorf("%s is %s", p, safefile.Kind(t))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("manifests: %s: %w: %v; refusing to replace it", dir, ErrNotBundle, err)
	}
	return m, nil
}

// checkReplaceable returns the bundle at dir that may be replaced (nil when
// dir is absent or an empty directory) or why it may not.
func checkReplaceable(dir string, o CreateOptions) (*Manifest, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("manifests: %s is %s: %w; refusing to replace it", dir, safefile.Kind(fi.Mode()), ErrNotBundle)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	if len(ents) == 0 {
		return nil, nil
	}
	if o.Suite == "" {
		return nil, fmt.Errorf("manifests: %s: %w (not empty)", dir, ErrNotBundle)
	}
	m, err := Owned(dir, o.Suite)
	if err != nil {
		return nil, err
	}
	if !o.Overwrite {
		return nil, fmt.Errorf("manifests: %s: %w (%s %s, digest %.16s); pass --overwrite to replace it", dir, ErrExists, m.Suite, m.SuiteVersion, m.Digest)
	}
	return m, nil
}
