package suite

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// Replay-proof variants (docs/spec.md §13d). A kernel that caches its
// output by input content, or replays one output across timed
// iterations, passes a fixed bundle. Variant i of a case has the case's
// params and its own inputs, drawn from the seed HMAC-SHA256(secret,
// "<id>.v<i>") (the hidden-split rule, the variant's id being
// "<id>.v<i>"); its bundle keeps the inputs, and of each golden output
// only the reference values of an HMAC-chosen sample of rows (SampleFrac
// of them, at least one) and the sha256 of the full golden. Without the
// secret neither the inputs nor the sampled rows can be predicted.

// SampleFrac is the share of an output's rows a variant keeps.
const SampleFrac = 0.015

// MaxVariants caps --variants.
const MaxVariants = 4096

// ErrVariants wraps bad variant requests.
var ErrVariants = errors.New("invalid variants request")

// VariantInfo is the info of a variant case in the variants manifest.
type VariantInfo struct {
	VariantOf string `json:"variant_of"`
	Index     int    `json:"index"`
	// Outputs lists, per golden output, the sampled rows' tensors and the
	// sha256 of the full golden .npy the variant's build produced.
	Outputs []VariantOutput `json:"outputs"`
}

// VariantOutput describes one sampled output of a variant.
type VariantOutput struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"` // the golden's stored dtype
	Shape []int64 `json:"shape"` // the golden's shape, in elements
	// Rows and Values name the int64 row indices [k] and float64 values
	// [k, row length] tensors: the reference the judge compares with (the
	// float32 truth where the case has one, else the golden, widened).
	Rows   string `json:"rows"`
	Values string `json:"values"`
	// Bound names the sampled rows of the tolerance's bound tensor (MXFP4
	// GEMM's S), when it has one.
	Bound        string            `json:"bound,omitempty"`
	GoldenSHA256 string            `json:"golden_sha256"`
	Tolerance    compare.Tolerance `json:"tolerance"`
}

// BuildVariants builds n variants of case id of r into the bundle writer
// bw (which the caller commits) and returns their manifest.
func BuildVariants(ctx context.Context, r *manifests.Recipe, id string, n int, secret []byte, bw *manifests.BundleWriter, o Options) (*manifests.Manifest, error) {
	return buildVariants(ctx, r, id, n, secret, BundleSink{bw}, o)
}

// buildVariants builds the variants into out: BuildVariants' bundle, or a
// HashSink when Regenerate checks a variants manifest.
func buildVariants(ctx context.Context, r *manifests.Recipe, id string, n int, secret []byte, out Sink, o Options) (*manifests.Manifest, error) {
	if n < 1 || n > MaxVariants {
		return nil, fmt.Errorf("%w: %d variants, want 1..%d", ErrVariants, n, MaxVariants)
	}
	if len(secret) == 0 {
		return nil, fmt.Errorf("%w: variants need a secret (their seeds and samples derive from it)", ErrVariants)
	}
	i := slices.IndexFunc(r.Cases, func(c manifests.RecipeCase) bool { return c.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: suite %s has no case %q", ErrVariants, r.Name, id)
	}
	base := r.Cases[i]
	if base.Op == PipelineOp {
		return nil, fmt.Errorf("%w: %s is a pipeline chain; variants vary one op's case (a stage's inputs are the earlier stage's goldens)", ErrVariants, id)
	}
	o2, ok := opTable[base.Op]
	if !ok {
		return nil, errUnknownOp(base)
	}
	vr := &manifests.Recipe{Name: r.Name + ".variants", Version: r.Version, SpecVersion: r.SpecVersion, Seed: r.Seed}
	for v := range n {
		vr.Cases = append(vr.Cases, manifests.RecipeCase{ID: fmt.Sprintf("%s.v%d", id, v), Op: base.Op, Split: manifests.SplitHidden, Params: base.Params})
	}
	sink := &variantSink{w: out, keep: map[string]*memFile{}, inputs: func(string) []string { return inputNames(o2, base.Params) }}
	opts := Options{Jobs: o.Jobs, Secret: secret, Splits: []string{manifests.SplitHidden}, Progress: o.Progress, Provenance: o.Provenance}
	m, err := Build(ctx, vr, sink, opts)
	if err != nil {
		return nil, err
	}
	for ci := range m.Cases {
		c := &m.Cases[ci]
		inputs := inputNames(o2, c.Params)
		var kept []manifests.Tensor
		info := VariantInfo{VariantOf: id, Index: ci}
		for _, t := range c.Tensors {
			if slices.Contains(inputs, t.Name) {
				kept = append(kept, t)
			}
		}
		for _, t := range c.Tensors {
			if t.Role != manifests.RoleGolden {
				continue
			}
			vo, tensors, err := sampleOutput(sink, c, &t, secret)
			if err != nil {
				return nil, fmt.Errorf("variant %s output %s: %w", c.ID, t.Name, err)
			}
			info.Outputs = append(info.Outputs, vo)
			kept = append(kept, tensors...)
		}
		c.Tensors = kept
		b, err := json.Marshal(info)
		if err != nil {
			return nil, err
		}
		c.Info = b
	}
	sum := sha256.Sum256(secret)
	m.HiddenCommitment = hex.EncodeToString(sum[:])
	return m, nil
}

// inputNames are the input tensors of a case of op o.
func inputNames(o *op, params json.RawMessage) []string {
	if o.tensorsOf != nil {
		in, _, _ := o.tensorsOf(params)
		return in
	}
	return o.inputs
}

// sampleOutput writes the sampled rows of golden t of variant c and
// returns its description and the two new tensor entries.
func sampleOutput(sink *variantSink, c *manifests.Case, t *manifests.Tensor, secret []byte) (VariantOutput, []manifests.Tensor, error) {
	var tol compare.Tolerance
	if err := json.Unmarshal(t.Tolerance, &tol); err != nil {
		return VariantOutput{}, nil, fmt.Errorf("tolerance: %w", err)
	}
	ref := t
	if tt := c.Tensor(t.Name + "_truth"); tt != nil && tol.Mode == compare.ModeAllclose {
		ref = tt
	}
	vals, err := sink.values(ref)
	if err != nil {
		return VariantOutput{}, nil, err
	}
	shape := elemShape(t)
	rowLen := int64(1)
	if len(shape) > 0 {
		rowLen = shape[len(shape)-1]
	}
	rows := int64(1)
	for _, s := range shape[:max(len(shape)-1, 0)] {
		rows *= s
	}
	if rowLen == 0 || rows == 0 {
		return VariantOutput{}, nil, fmt.Errorf("empty output")
	}
	idx := SampleRows(secret, c.ID, t.Name, rows)
	pick := func(v []float64) []byte {
		b := make([]byte, 0, 8*int64(len(idx))*rowLen)
		for _, r := range idx {
			for _, x := range v[r*rowLen : (r+1)*rowLen] {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
			}
		}
		return b
	}
	ib := make([]byte, 8*len(idx))
	for i, r := range idx {
		binary.LittleEndian.PutUint64(ib[8*i:], uint64(r))
	}
	k := int64(len(idx))
	type npyOut struct {
		name, dt string
		descr    npy.DType
		shape    []int64
		data     []byte
	}
	writes := []npyOut{{t.Name + ".rows", "int64", npy.Int64, []int64{k}, ib}, {t.Name + ".values", "float64", npy.Float64, []int64{k, rowLen}, pick(vals)}}
	if tol.Bound != "" {
		bt := c.Tensor(tol.Bound)
		if bt == nil {
			return VariantOutput{}, nil, fmt.Errorf("no bound tensor %s", tol.Bound)
		}
		bv, err := sink.values(bt)
		if err != nil {
			return VariantOutput{}, nil, err
		}
		writes = append(writes, npyOut{t.Name + ".bound", "float64", npy.Float64, []int64{k, rowLen}, pick(bv)})
	}
	var out []manifests.Tensor
	for _, w := range writes {
		rel := path.Join(c.ID, w.name+".npy")
		f, err := sink.w.Create(rel, false)
		if err != nil {
			return VariantOutput{}, nil, err
		}
		nw, err := npy.NewWriter(f, npy.Header{Descr: w.descr, Shape: w.shape})
		if err == nil {
			_, err = nw.Write(w.data)
		}
		if err == nil {
			err = nw.Close()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return VariantOutput{}, nil, err
		}
		out = append(out, manifests.Tensor{Name: w.name, Role: manifests.RoleAux, Path: rel, DType: w.dt, Shape: w.shape, SHA256: f.SHA256(), Bytes: f.Bytes()})
	}
	vo := VariantOutput{Name: t.Name, DType: t.DType, Shape: shape, Rows: out[0].Name, Values: out[1].Name, GoldenSHA256: t.SHA256, Tolerance: tol}
	if len(out) > 2 {
		vo.Bound = out[2].Name
	}
	return vo, out, nil
}

// SampleRows returns the sorted rows of output name of variant id that
// the variant keeps: ceil(SampleFrac*rows), at least one, drawn from a
// PCG seeded by HMAC-SHA256(secret, "rows" | id | name).
func SampleRows(secret []byte, id, name string, rows int64) []int64 {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("rows\x00" + id + "\x00" + name))
	s := mac.Sum(nil)
	rng := rand.New(rand.NewPCG(binary.BigEndian.Uint64(s[:8]), binary.BigEndian.Uint64(s[8:16])))
	k := min(rows, max(1, int64(math.Ceil(SampleFrac*float64(rows)))))
	seen := make(map[int64]bool, k)
	out := make([]int64, 0, k)
	for int64(len(out)) < k {
		r := rng.Int64N(rows)
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// variantSink writes a variant's inputs to the bundle and keeps every
// other tensor (goldens, truths, aux) in memory, hashed, never written.
type variantSink struct {
	w      Sink
	inputs func(caseID string) []string
	mu     sync.Mutex
	keep   map[string]*memFile
}

func (s *variantSink) Create(rel string, compress bool) (File, error) {
	id, file := path.Split(rel)
	if slices.Contains(s.inputs(path.Clean(id)), strings.TrimSuffix(file, ".npy")) {
		return s.w.Create(rel, false)
	}
	f := &memFile{}
	s.mu.Lock()
	s.keep[rel] = f
	s.mu.Unlock()
	return f, nil
}

// values decodes a kept tensor's data.
func (s *variantSink) values(t *manifests.Tensor) ([]float64, error) {
	f := s.keep[t.Path]
	if f == nil {
		return nil, fmt.Errorf("tensor %s was not kept", t.Name)
	}
	h, off, err := npy.ReadHeader(bytes.NewReader(f.buf.Bytes()))
	if err != nil {
		return nil, err
	}
	dt, err := dtype.Parse(t.DType)
	if err != nil {
		return nil, err
	}
	data := f.buf.Bytes()[off:]
	v := make([]float64, h.NumElems()*int64(dt.ElemsPerItem()))
	dt.Decode(v, data)
	return v, nil
}

// memFile is a File kept in memory.
type memFile struct {
	buf bytes.Buffer
}

func (f *memFile) Write(p []byte) (int, error) { return f.buf.Write(p) }
func (f *memFile) Close() error                { return nil }
func (f *memFile) SHA256() string {
	s := sha256.Sum256(f.buf.Bytes())
	return hex.EncodeToString(s[:])
}
func (f *memFile) Bytes() int64 { return int64(f.buf.Len()) }

// CaseVariant returns the VariantInfo of a case gen --variants wrote (it
// holds no golden, only sampled rows), and false for any other case.
func CaseVariant(c *manifests.Case) (VariantInfo, bool) {
	var vi VariantInfo
	if json.Unmarshal(c.Info, &vi) != nil || vi.VariantOf == "" {
		return VariantInfo{}, false
	}
	return vi, true
}

// variantsBase recognises a manifest BuildVariants wrote (suite
// "<suite>.variants", cases "<id>.v0" ... "<id>.v<n-1>" whose info is a
// VariantInfo of id) and returns the recipe of its base case and n.
func variantsBase(m *manifests.Manifest) (*manifests.Recipe, int, bool) {
	name, ok := strings.CutSuffix(m.Suite, ".variants")
	if !ok || len(m.Cases) == 0 {
		return nil, 0, false
	}
	var base manifests.RecipeCase
	for i, c := range m.Cases {
		vi, ok := CaseVariant(&m.Cases[i])
		if !ok || vi.Index != i || c.ID != fmt.Sprintf("%s.v%d", vi.VariantOf, i) {
			return nil, 0, false
		}
		if i == 0 {
			base = manifests.RecipeCase{ID: vi.VariantOf, Op: c.Op, Split: manifests.SplitBenchmark, Params: c.Params}
		} else if vi.VariantOf != base.ID || c.Op != base.Op || !sameJSON(c.Params, base.Params) {
			return nil, 0, false
		}
	}
	r := &manifests.Recipe{Name: name, Version: m.SuiteVersion, SpecVersion: m.SpecVersion, Seed: m.Seed, Cases: []manifests.RecipeCase{base}}
	return r, len(m.Cases), true
}

// regenerateVariants rebuilds a variants manifest's inputs, sampled rows
// and golden hashes from the secret, hashing only.
func regenerateVariants(ctx context.Context, m *manifests.Manifest, r *manifests.Recipe, n int, o Options) ([]manifests.Problem, error) {
	if err := checkSecret(m, o.Secret); err != nil {
		return nil, err
	}
	got, err := buildVariants(ctx, r, r.Cases[0].ID, n, o.Secret, HashSink{}, o)
	if err != nil {
		return nil, err
	}
	return CompareManifests(m, got), nil
}
