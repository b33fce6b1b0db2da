package export

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/internal/newfile"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// Format names an export format.
type Format string

// The formats Export writes.
const (
	Safetensors     Format = "safetensors"
	FlashInferTrace Format = "flashinfer-trace"
	MsOpST          Format = "msopst"
)

// Formats lists every format, in the order the CLI shows them.
var Formats = []Format{Safetensors, FlashInferTrace, MsOpST}

// IndexFile and ManifestFile are goldset's own files in every export.
const (
	IndexFile    = "goldset-export.json"
	ManifestFile = "goldset-manifest.json"
	// IndexVersion is the version of IndexFile's schema.
	IndexVersion = 1
)

// Sentinel errors.
var (
	// ErrExists: the output directory exists and is not empty.
	ErrExists = errors.New("output directory exists and is not empty")
	// ErrUnsupported: a case (or all) cannot be written in the format.
	ErrUnsupported = errors.New("not representable in the format")
	// ErrNoCase: a --case id the bundle does not have.
	ErrNoCase = errors.New("no such case")
	// ErrNotExport: the directory is not a goldset export.
	ErrNotExport = errors.New("not a goldset export")
)

// Options says what to export.
type Options struct {
	Bundle string   // bundle directory or its manifest.json
	Out    string   // the export directory (must not exist, or be empty)
	Format Format   // what to write
	Cases  []string // case ids; empty: every case
	// Progress, when set, is called after each case with the cases done.
	Progress func(done, total int)
}

// Skipped is a case left out of an export, and why.
type Skipped struct {
	Case   string `json:"case"`
	Op     string `json:"op"`
	Reason string `json:"reason"`
}

// File is one file of an export: its path (slash-separated, relative to
// the export), size and sha256, and the case tensors it holds.
type File struct {
	Path    string   `json:"path"`
	Bytes   int64    `json:"bytes"`
	SHA256  string   `json:"sha256"`
	Case    string   `json:"case,omitempty"`
	Tensors []string `json:"tensors,omitempty"`
}

// Index is IndexFile: what an export holds, for import to check.
type Index struct {
	SchemaVersion  int       `json:"schema_version"`
	Tool           string    `json:"tool"`
	Format         Format    `json:"format"`
	Suite          string    `json:"suite"`
	SuiteVersion   string    `json:"suite_version"`
	Seed           uint64    `json:"seed"`
	ManifestDigest string    `json:"manifest_digest"`
	Cases          []string  `json:"cases"`
	Skipped        []Skipped `json:"skipped"`
	Files          []File    `json:"files"`
}

// Result is what Export did.
type Result struct {
	OK      bool      `json:"ok"`
	Out     string    `json:"out"`
	Format  Format    `json:"format"`
	Cases   []string  `json:"cases"`
	Skipped []Skipped `json:"skipped"`
	Files   int       `json:"files"`
	Bytes   int64     `json:"bytes"`
}

// ParseFormat checks a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("export: unknown format %q (one of: safetensors, flashinfer-trace, msopst)", s)
}

// bundleDir returns the directory of a bundle path that names it or its
// manifest.json.
func bundleDir(p string) string {
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return filepath.Dir(p)
	}
	return p
}

// Export writes the cases of a bundle in a format. Every tensor is read
// through its sha256 check (a bundle file that differs from its manifest
// stops the export). The export is written into a temporary directory
// beside Out and renamed onto it when complete: an error or Ctrl-C leaves
// nothing at Out.
func Export(ctx context.Context, o Options) (*Result, error) {
	m, mbytes, err := manifests.ReadManifestBytes(o.Bundle) // one read: the carried bytes are the ones checked
	if err != nil {
		return nil, err
	}
	cases, err := selectCases(m, o.Cases)
	if err != nil {
		return nil, err
	}
	var w writer
	switch o.Format {
	case Safetensors:
		w = &stWriter{}
	case FlashInferTrace:
		w = &fiWriter{defs: map[string]*fiDef{}}
	case MsOpST:
		w = &msWriter{ops: map[string]*msOp{}}
	default:
		_, err := ParseFormat(string(o.Format))
		return nil, err
	}
	if err := checkOut(o.Out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(o.Out)), 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(o.Out)), "."+filepath.Base(filepath.Clean(o.Out))+".goldset-export-tmp-")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp) // ours: created above
		}
	}()
	e := &exporter{ctx: ctx, m: m, dir: bundleDir(o.Bundle), out: tmp}
	idx := &Index{SchemaVersion: IndexVersion, Tool: "goldset", Format: o.Format, Suite: m.Suite, SuiteVersion: m.SuiteVersion,
		Seed: m.Seed, ManifestDigest: m.Digest, Cases: []string{}, Skipped: []Skipped{}}
	for i, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if why := w.unsupported(c); why != "" {
			if len(o.Cases) > 0 {
				return nil, fmt.Errorf("export: case %s (%s): %w: %s", c.ID, c.Op, ErrUnsupported, why)
			}
			idx.Skipped = append(idx.Skipped, Skipped{Case: c.ID, Op: c.Op, Reason: why})
			continue
		}
		if err := w.writeCase(e, c); err != nil {
			return nil, err
		}
		idx.Cases = append(idx.Cases, c.ID)
		if o.Progress != nil {
			o.Progress(i+1, len(cases))
		}
	}
	if len(idx.Cases) == 0 {
		return nil, fmt.Errorf("export: %w: no case of %s can be written as %s (%d skipped: %s)", ErrUnsupported, o.Bundle, o.Format, len(idx.Skipped), idx.Skipped[0].Reason)
	}
	if err := w.finish(e); err != nil {
		return nil, err
	}
	if err := e.writeFile(ManifestFile, "", nil, func(w io.Writer) error { _, err := w.Write(mbytes); return err }); err != nil {
		return nil, err
	}
	sort.Slice(e.files, func(i, j int) bool { return e.files[i].Path < e.files[j].Path })
	idx.Files = e.files
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, IndexFile), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(tmp, o.Out); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	done = true
	res := &Result{OK: true, Out: o.Out, Format: o.Format, Cases: idx.Cases, Skipped: idx.Skipped, Files: len(e.files) + 1}
	for _, f := range e.files {
		res.Bytes += f.Bytes
	}
	return res, nil
}

// checkOut refuses an existing Out that is not an empty directory: an
// export never replaces anything.
func checkOut(out string) error {
	ents, err := os.ReadDir(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("export: %w", err)
	case len(ents) > 0:
		return fmt.Errorf("export: %s: %w (nothing is replaced; choose a new --out)", out, ErrExists)
	}
	return nil
}

func selectCases(m *manifests.Manifest, ids []string) ([]*manifests.Case, error) {
	if len(ids) == 0 {
		out := make([]*manifests.Case, len(m.Cases))
		for i := range m.Cases {
			out[i] = &m.Cases[i]
		}
		return out, nil
	}
	var out []*manifests.Case
	for _, id := range ids {
		c := m.Case(id)
		if c == nil {
			var all []string
			for _, cc := range m.Cases {
				all = append(all, cc.ID)
			}
			return nil, fmt.Errorf("export: %w %q (cases: %s)", ErrNoCase, id, strings.Join(all, ", "))
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// writer is one format.
type writer interface {
	// unsupported says why a case cannot be written ("" when it can).
	unsupported(c *manifests.Case) string
	writeCase(e *exporter, c *manifests.Case) error
	// finish writes the files that gather cases (definitions, case lists).
	finish(e *exporter) error
}

// exporter holds what the formats share: the bundle, the temporary output
// and the files written so far.
type exporter struct {
	ctx   context.Context
	m     *manifests.Manifest
	dir   string
	out   string
	files []File
}

// writeFile writes one file of the export through fill, recording its
// size and sha256.
func (e *exporter) writeFile(rel, caseID string, tensors []string, fill func(w io.Writer) error) error {
	p := filepath.Join(e.out, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	d, err := newfile.Write(p, 256<<10, fill)
	if err != nil {
		return fmt.Errorf("export: %s: %w", rel, err)
	}
	e.files = append(e.files, File{Path: rel, Bytes: d.Bytes, SHA256: d.SHA256, Case: caseID, Tensors: tensors})
	return nil
}

// copyTensor streams the data of a bundle tensor (after its .npy header)
// to w, calling visit with each chunk when set. The header must agree
// with the manifest, and the file's size and sha256 must be the
// manifest's: otherwise manifests.ErrMismatch, and the export stops.
func (e *exporter) copyTensor(t *manifests.Tensor, w io.Writer, visit func([]byte)) error {
	rc, err := manifests.OpenTensor(e.dir, t)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer rc.Close()
	sum := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(rc, sum), int(min(t.Bytes+1, 1<<20)))
	h, hn, err := npy.ReadHeader(br)
	if err != nil {
		return fmt.Errorf("export: %s: %w", t.Path, err)
	}
	if err := manifests.CheckHeader(h, t); err != nil {
		return fmt.Errorf("export: %s: %w: %v", t.Path, manifests.ErrMismatch, err)
	}
	want := h.NumBytes()
	buf := make([]byte, min(max(want, 1), 1<<20))
	for done := int64(0); done < want; {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		k := min(int64(len(buf)), want-done)
		if _, err := io.ReadFull(br, buf[:k]); err != nil {
			return fmt.Errorf("export: %s: %w: %v", t.Path, manifests.ErrMismatch, err)
		}
		if visit != nil {
			visit(buf[:k])
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		done += k
	}
	if n, _ := io.Copy(io.Discard, br); n > 0 || hn+want != t.Bytes {
		return fmt.Errorf("export: %s: %w: size differs from the manifest's %d bytes", t.Path, manifests.ErrMismatch, t.Bytes)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != t.SHA256 {
		return fmt.Errorf("export: %s: %w: sha256 %s, manifest says %s (run goldset verify)", t.Path, manifests.ErrMismatch, got, t.SHA256)
	}
	return nil
}

// dataBytes is the data size of a manifest tensor (after the .npy header).
func dataBytes(t *manifests.Tensor) (int64, error) {
	d, ok := manifests.NpyDType(t.DType)
	if !ok {
		return 0, fmt.Errorf("export: tensor %s: unknown dtype %q", t.Name, t.DType)
	}
	n := npy.Header{Descr: d, Shape: t.Shape}.NumBytes()
	if n < 0 {
		return 0, fmt.Errorf("export: tensor %s: shape %v too large", t.Name, t.Shape)
	}
	return n, nil
}

// npyHasher starts the sha256 a tensor's .npy file would have: its header
// as goldset writes it, ready for the data bytes. Import compares the sum
// with the manifest's sha256, so an exported tensor is proved to be the
// bundle's bit for bit.
func npyHasher(t *manifests.Tensor) (hash.Hash, error) {
	d, ok := manifests.NpyDType(t.DType)
	if !ok {
		return nil, fmt.Errorf("unknown dtype %q", t.DType)
	}
	hdr, err := npy.EncodeHeader(npy.Header{Descr: d, Shape: t.Shape})
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write(hdr)
	return h, nil
}

// caseRecord is the manifest's record of a case as compact JSON (the
// metadata every format carries).
func caseRecord(c *manifests.Case) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// metadata is the string map carried by every exported safetensors file.
func metadata(m *manifests.Manifest, c *manifests.Case) map[string]string {
	return map[string]string{
		"format":                  "pt",
		"goldset.case":            caseRecord(c),
		"goldset.case_id":         c.ID,
		"goldset.op":              c.Op,
		"goldset.suite":           m.Suite,
		"goldset.suite_version":   m.SuiteVersion,
		"goldset.seed":            fmt.Sprint(m.Seed),
		"goldset.manifest_digest": m.Digest,
		"goldset.export_version":  fmt.Sprint(IndexVersion),
		"goldset.spec_version":    fmt.Sprint(m.SpecVersion),
		"goldset.generator":       m.Generator,
	}
}

// stDType maps a goldset dtype to the safetensors dtype that stores it.
// float8_e8m0fnu and the packed float4_e2m1fn_x2 are stored as U8 bytes
// (their manifest shape counts bytes): safetensors 0.8's torch loader has
// no F8_E8M0 entry in its dtype table, and F4 counts 4-bit elements.
func stDType(d string) (string, bool) {
	switch d {
	case "float16":
		return "F16", true
	case "bfloat16":
		return "BF16", true
	case "float32":
		return "F32", true
	case "float64":
		return "F64", true
	case "int32":
		return "I32", true
	case "int64":
		return "I64", true
	case "uint8", "float8_e8m0fnu", "float4_e2m1fn_x2":
		return "U8", true
	case "float8_e4m3fn":
		return "F8_E4M3", true
	}
	return "", false
}

// valueRange returns the smallest and largest value of a tensor's data
// (NaN skipped), decoding chunks as they stream by.
type valueRange struct {
	d       dtype.DType
	lo, hi  float64
	seen    bool
	scratch []float64
}

func newValueRange(name string) (*valueRange, error) {
	d, err := dtype.Parse(name)
	if err != nil {
		return nil, err
	}
	return &valueRange{d: d, lo: math.Inf(1), hi: math.Inf(-1)}, nil
}

func (v *valueRange) visit(b []byte) {
	n := len(b) / v.d.ItemSize() * v.d.ElemsPerItem()
	if cap(v.scratch) < n {
		v.scratch = make([]float64, n)
	}
	s := v.scratch[:n]
	v.d.Decode(s, b[:len(b)/v.d.ItemSize()*v.d.ItemSize()])
	for _, x := range s {
		if x != x {
			continue
		}
		v.seen = true
		v.lo, v.hi = min(v.lo, x), max(v.hi, x)
	}
}

// rangeOf is [lo, hi], or [0, 0] for an empty or all-NaN tensor; infinite
// ends are clamped to the dtype's largest finite value.
func (v *valueRange) rangeOf() [2]float64 {
	if !v.seen {
		return [2]float64{0, 0}
	}
	m := v.d.MaxFinite()
	return [2]float64{max(v.lo, -m), min(v.hi, m)}
}
