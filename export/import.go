package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/safetensors"
)

// maxIndexBytes caps IndexFile and ManifestFile reads.
const maxIndexBytes = manifests.MaxManifestBytes

// ImportResult is what Import found: the export's format and source, the
// tensors proved identical to the manifest's, and every difference.
type ImportResult struct {
	Dir            string              `json:"dir"`
	Format         Format              `json:"format"`
	Suite          string              `json:"suite"`
	SuiteVersion   string              `json:"suite_version"`
	ManifestDigest string              `json:"manifest_digest"`
	Cases          int                 `json:"cases"`
	Files          int                 `json:"files"`
	Tensors        int                 `json:"tensors"`
	OK             bool                `json:"ok"`
	Problems       []manifests.Problem `json:"problems"`
}

// ImportOptions says what to check an export against.
type ImportOptions struct {
	Dir string
	// Bundle, when set, is the source bundle: its manifest digest must be
	// the one the export carries.
	Bundle string
}

func readSmall(root, rel string) ([]byte, error) {
	f, err := safefile.OpenIn(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxIndexBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, maxIndexBytes)
	}
	return b, nil
}

// Import reads an export back and proves every tensor in it equal to the
// source manifest's: for each tensor it rebuilds the .npy bytes goldset
// wrote (header from the manifest's dtype and shape, then the exported
// data) and compares their sha256 with the manifest's. It also checks
// every file's sha256 against the export's index, that the carried
// manifest is unedited (its digest), that every tensor of every exported
// case is present, and, with Bundle, that the source bundle's manifest is
// the one carried. An error is returned only when the directory is not an
// export at all (ErrNotExport) or cannot be read; differences are
// Problems.
func Import(ctx context.Context, o ImportOptions) (*ImportResult, error) {
	if err := safefile.Dir(o.Dir); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	ib, err := readSmall(o.Dir, IndexFile)
	if err != nil {
		return nil, fmt.Errorf("import: %s: %w: %v", o.Dir, ErrNotExport, err)
	}
	var idx Index
	dec := json.NewDecoder(bytes.NewReader(ib))
	dec.DisallowUnknownFields()
	err = dec.Decode(&idx)
	if _, terr := dec.Token(); err == nil && terr != io.EOF {
		err = errors.New("data after the index's JSON value") // an appended or concatenated file
	}
	if err != nil || idx.Tool != "goldset" || idx.SchemaVersion != IndexVersion {
		return nil, fmt.Errorf("import: %s: %w: %s is not a goldset export index (schema %d): %v", o.Dir, ErrNotExport, IndexFile, idx.SchemaVersion, err)
	}
	if _, err := ParseFormat(string(idx.Format)); err != nil {
		return nil, fmt.Errorf("import: %s: %w: %v", o.Dir, ErrNotExport, err)
	}
	res := &ImportResult{Dir: o.Dir, Format: idx.Format, Suite: idx.Suite, SuiteVersion: idx.SuiteVersion, ManifestDigest: idx.ManifestDigest, Cases: len(idx.Cases), Files: len(idx.Files)}
	prob := func(p, what string, a ...any) {
		res.Problems = append(res.Problems, manifests.Problem{Path: p, What: fmt.Sprintf(what, a...)})
	}
	mb, err := readSmall(o.Dir, ManifestFile)
	if err != nil {
		return nil, fmt.Errorf("import: %s: %w: %v", o.Dir, ErrNotExport, err)
	}
	m, err := manifests.ParseManifest(ManifestFile, mb)
	if err != nil {
		return nil, fmt.Errorf("import: %s: %w", o.Dir, err)
	}
	if d, err := manifests.ComputeDigest(m); err != nil || d != m.Digest {
		prob(ManifestFile, "digest %s does not match its content (%s): the carried manifest was edited", m.Digest, d)
	}
	if m.Digest != idx.ManifestDigest {
		prob(IndexFile, "manifest_digest %s, the carried manifest's is %s", idx.ManifestDigest, m.Digest)
	}
	if o.Bundle != "" {
		src, err := manifests.ReadManifest(o.Bundle)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		if src.Digest != m.Digest {
			prob(o.Bundle, "the bundle's manifest digest %s is not the export's %s: exported from another bundle", src.Digest, m.Digest)
		}
	}
	indexed := map[string]bool{IndexFile: true}
	seen := map[string]map[string]bool{} // case -> tensors proved
	for _, f := range idx.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) || indexed[f.Path] {
			prob(IndexFile, "file path %q is not local to the export or is listed twice", f.Path)
			continue
		}
		indexed[f.Path] = true
		var c *manifests.Case
		if f.Case != "" {
			if c = m.Case(f.Case); c == nil {
				prob(f.Path, "case %q is not in the manifest", f.Case)
				continue
			}
			if seen[c.ID] == nil {
				seen[c.ID] = map[string]bool{}
			}
		}
		probs, proved := checkFile(ctx, o.Dir, f, c)
		res.Problems = append(res.Problems, probs...)
		for _, t := range proved {
			seen[c.ID][t] = true
			res.Tensors++
		}
	}
	for _, id := range idx.Cases {
		c := m.Case(id)
		if c == nil {
			prob(IndexFile, "case %q is not in the manifest", id)
			continue
		}
		for _, t := range c.Tensors {
			if !seen[id][t.Name] && !slices.ContainsFunc(res.Problems, func(p manifests.Problem) bool { return p.Case == id && p.Tensor == t.Name }) {
				res.Problems = append(res.Problems, manifests.Problem{Case: id, Tensor: t.Name, What: "tensor is in the manifest but in no exported file"})
			}
		}
	}
	// Files on disk the index does not list are reported: an export is
	// exactly what its index says.
	filepath.WalkDir(o.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(o.Dir, p)
		if rel = filepath.ToSlash(rel); !indexed[rel] && rel != ManifestFile {
			prob(rel, "file is not listed in %s", IndexFile)
		}
		return nil
	})
	res.OK = len(res.Problems) == 0
	if res.Problems == nil {
		res.Problems = []manifests.Problem{}
	}
	return res, nil
}

// checkFile hashes one exported file against the index and, for a file of
// case tensors, proves each tensor against the manifest. It returns the
// problems and the names of the tensors proved.
func checkFile(ctx context.Context, dir string, f File, c *manifests.Case) ([]manifests.Problem, []string) {
	var probs []manifests.Problem
	prob := func(tensor, what string, a ...any) {
		p := manifests.Problem{Path: f.Path, Tensor: tensor, What: fmt.Sprintf(what, a...)}
		if c != nil {
			p.Case = c.ID
		}
		probs = append(probs, p)
	}
	fh, err := safefile.OpenIn(dir, f.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			prob("", "missing")
		} else {
			prob("", "%v", err)
		}
		return probs, nil
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		prob("", "%v", err)
		return probs, nil
	}
	// One pass over the file: the sha256 the index checks is taken from
	// the same reads that prove its tensors (a tee below the buffer, so
	// every byte is hashed once, in order, whatever is read above it).
	sum := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(ctxReader{ctx, fh}, sum), int(min(st.Size()+1, 1<<20)))
	var proved []string
	if c != nil && len(f.Tensors) > 0 {
		proved = proveTensors(ctx, br, st.Size(), f, c, prob)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		prob("", "read: %v", err)
		return probs, nil
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != f.SHA256 || st.Size() != f.Bytes {
		p := manifests.Problem{Path: f.Path, What: fmt.Sprintf("sha256 %s (%d bytes), the export's index says %s (%d bytes): the file was changed", got, st.Size(), f.SHA256, f.Bytes)}
		if c != nil {
			p.Case = c.ID
		}
		probs = slices.Insert(probs, 0, p) // the file's problem first, as before its tensors'
	}
	return probs, proved
}

// proveTensors reads the tensors of one exported file from r, positioned
// at its start, in file order, and proves each tensor the index lists
// against case c of the manifest. It returns the names proved; what it
// leaves unread the caller drains.
func proveTensors(ctx context.Context, r *bufio.Reader, size int64, f File, c *manifests.Case, prob func(tensor, what string, a ...any)) []string {
	var proved []string
	check := func(name string, r io.Reader, n int64) {
		t := c.Tensor(name)
		if t == nil {
			prob(name, "tensor is not in case %s of the manifest", c.ID)
			return
		}
		want, err := dataBytes(t)
		if err != nil || want != n {
			prob(name, "%d data bytes, the manifest's %s %v needs %d", n, t.DType, t.Shape, want)
			return
		}
		h, err := npyHasher(t)
		if err != nil {
			prob(name, "%v", err)
			return
		}
		if _, err := io.CopyN(h, ctxReader{ctx, r}, n); err != nil {
			prob(name, "read: %v", err)
			return
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != t.SHA256 {
			prob(name, "data differs from the bundle's: the .npy it makes has sha256 %s, the manifest says %s", got, t.SHA256)
			return
		}
		proved = append(proved, name)
	}
	if path.Ext(f.Path) == ".bin" {
		if len(f.Tensors) != 1 {
			prob("", "a .bin file holds one tensor, the index lists %d", len(f.Tensors))
			return nil
		}
		check(f.Tensors[0], r, size)
		return proved
	}
	h, err := safetensors.ReadHeader(r, size)
	if err != nil {
		prob("", "%v", err)
		return nil
	}
	if got := h.Metadata["goldset.case"]; got != caseRecord(c) {
		prob("", "__metadata__ goldset.case is not the manifest's record of case %s", c.ID)
	}
	listed := map[string]bool{}
	for _, name := range f.Tensors {
		listed[name] = true
		if _, ok := h.Tensor(name); !ok {
			prob(name, "tensor listed in the index is not in the file")
		}
	}
	// ReadHeader returns the tensors in offset order, back to back from
	// DataStart, where r now is: each is read in turn.
	for _, info := range h.Tensors {
		n := info.End - info.Begin
		lr := io.LimitReader(r, n)
		switch t := c.Tensor(info.Name); {
		case !listed[info.Name]:
		case t != nil && !stMatches(info, t):
			sd, _ := stDType(t.DType)
			prob(info.Name, "safetensors %s %v, the manifest's %s %v is stored as %s %v", info.DType, info.Shape, t.DType, t.Shape, sd, t.Shape)
		default:
			check(info.Name, lr, n)
		}
		if _, err := io.Copy(io.Discard, lr); err != nil {
			return proved // the caller's drain reports the read error
		}
	}
	if len(h.Tensors) != len(f.Tensors) {
		prob("", "file holds %d tensors, the index lists %d", len(h.Tensors), len(f.Tensors))
	}
	return proved
}

// stMatches says whether a safetensors entry has the dtype and shape
// export stores manifest tensor t as.
func stMatches(info safetensors.Info, t *manifests.Tensor) bool {
	sd, _ := stDType(t.DType)
	return info.DType == sd && slices.Equal(info.Shape, t.Shape)
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
