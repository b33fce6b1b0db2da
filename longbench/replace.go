package longbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/manifests"
)

// ErrNotOurs: the output path exists and is not provably a longbench build
// (a file, a link, a directory whose manifest.json is not a longbench
// manifest, or one holding files the manifest does not list). It is never
// replaced, --overwrite or not.
var ErrNotOurs = errors.New("output exists and is not a goldset longbench build")

// kernelsDir is where --kernel-suite puts its bundle inside a build.
const kernelsDir = "kernels"

// ownedBuild proves that dir (a directory) is a longbench build: its
// manifest.json parses as a longbench manifest (Format ManifestFormat) and
// every entry is that manifest, one of its outputs, or the kernel bundle
// under kernels/ that manifests.Owned accepts. Nothing is followed.
func ownedBuild(dir string) error {
	f, err := safefile.Open(filepath.Join(dir, ManifestFile))
	if err != nil {
		return fmt.Errorf("longbench: output %s: %w (no readable manifest.json: %v)", dir, ErrNotOurs, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, manifests.MaxManifestBytes))
	f.Close()
	if err != nil {
		return fmt.Errorf("longbench: output %s: %w (%v)", dir, ErrNotOurs, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil || m.Format != ManifestFormat {
		return fmt.Errorf("longbench: output %s: %w (manifest.json is not a %s manifest)", dir, ErrNotOurs, ManifestFormat)
	}
	listed := map[string]bool{ManifestFile: true}
	for _, o := range m.Outputs {
		listed[filepath.ToSlash(filepath.Clean(o.Path))] = true
	}
	kernels := map[string]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch t := d.Type(); {
		case rel == ".":
			return nil
		case rel == kernelsDir && t.IsDir():
			return nil
		case strings.HasPrefix(rel, kernelsDir+"/") && strings.Count(rel, "/") == 1 && t.IsDir():
			kernels[p] = true
			return filepath.SkipDir // checked as a goldset bundle below
		case t.IsRegular() && listed[rel]:
			return nil
		case t.IsRegular() || t.IsDir():
			return fmt.Errorf("%s is not part of the build", p)
		default:
			return fmt.Errorf("%s is %s", p, safefile.Kind(t))
		}
	})
	if err != nil {
		return fmt.Errorf("longbench: output %s: %w: %v; refusing to replace it", dir, ErrNotOurs, err)
	}
	for k := range kernels {
		if _, err := manifests.Owned(k, filepath.Base(k)); err != nil {
			return fmt.Errorf("longbench: output %s: %w: %v", dir, ErrNotOurs, err)
		}
	}
	return nil
}

// checkOut says whether out may be written: absent or an empty directory
// (replacing false), or a longbench build and overwrite set (replacing
// true). A build without overwrite wraps ErrOutputExists; anything else
// wraps ErrNotOurs.
func checkOut(out string, overwrite bool) (replacing bool, err error) {
	fi, err := os.Lstat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("longbench: output %s: %w", out, err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("longbench: output %s is %s: %w", out, safefile.Kind(fi.Mode()), ErrNotOurs)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return false, fmt.Errorf("longbench: output %s: %w", out, err)
	}
	if len(entries) == 0 {
		return false, nil
	}
	if err := ownedBuild(out); err != nil {
		return false, err
	}
	if !overwrite {
		return false, fmt.Errorf("longbench: output directory %s holds a longbench build: %w (pass --overwrite to replace it)", out, ErrOutputExists)
	}
	return true, nil
}
