package diff_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// Hand-built bundles for the tests: every .npy is encoded here and its
// sha256 computed here, independently of the generator.

type tensorSpec struct {
	name, role, dtype string
	shape             []int64
	data              []byte // raw little-endian element bytes
	tol               string // tolerance JSON, optional
	zstd              bool
}

type caseSpec struct {
	id, op, split string
	params, info  string
	tensors       []tensorSpec
}

type bundleSpec struct {
	suiteVersion string
	seed         uint64
	cases        []caseSpec
}

func (b bundleSpec) clone() bundleSpec {
	c := b
	c.cases = make([]caseSpec, len(b.cases))
	for i, cs := range b.cases {
		cs.tensors = slices.Clone(cs.tensors)
		for j := range cs.tensors {
			cs.tensors[j].data = slices.Clone(cs.tensors[j].data)
			cs.tensors[j].shape = slices.Clone(cs.tensors[j].shape)
		}
		c.cases[i] = cs
	}
	return c
}

// tensor returns the spec of case ci, tensor name.
func (b *bundleSpec) tensor(caseID, name string) *tensorSpec {
	for i := range b.cases {
		if b.cases[i].id != caseID {
			continue
		}
		for j := range b.cases[i].tensors {
			if b.cases[i].tensors[j].name == name {
				return &b.cases[i].tensors[j]
			}
		}
	}
	panic("test bundle has no tensor " + caseID + "/" + name)
}

// buildBundle writes b into dir (created) and returns its manifest.
func buildBundle(dir string, b bundleSpec) (*manifests.Manifest, error) {
	m := &manifests.Manifest{
		SchemaVersion: manifests.SchemaVersion,
		Suite:         "test-suite",
		SuiteVersion:  b.suiteVersion,
		SpecVersion:   1,
		Generator:     "hand-1",
		Seed:          b.seed,
	}
	for _, cs := range b.cases {
		c := manifests.Case{ID: cs.id, Op: cs.op, Split: cs.split, Params: json.RawMessage(cs.params)}
		if cs.info != "" {
			c.Info = json.RawMessage(cs.info)
		}
		for _, ts := range cs.tensors {
			descr, ok := manifests.NpyDType(ts.dtype)
			if !ok {
				return nil, fmt.Errorf("bad dtype %q", ts.dtype)
			}
			var buf bytes.Buffer
			w, err := npy.NewWriter(&buf, npy.Header{Descr: descr, Shape: ts.shape})
			if err != nil {
				return nil, err
			}
			if _, err := w.Write(ts.data); err != nil {
				return nil, err
			}
			if err := w.Close(); err != nil {
				return nil, err
			}
			sum := sha256.Sum256(buf.Bytes())
			t := manifests.Tensor{
				Name: ts.name, Role: ts.role, DType: ts.dtype, Shape: ts.shape,
				Path: cs.id + "/" + ts.name + ".npy", SHA256: hex.EncodeToString(sum[:]), Bytes: int64(buf.Len()),
			}
			if ts.tol != "" {
				t.Tolerance = json.RawMessage(ts.tol)
			}
			file := buf.Bytes()
			if ts.zstd {
				t.Path += ".zst"
				t.Compression = "zstd"
				enc, err := zstd.NewWriter(nil)
				if err != nil {
					return nil, err
				}
				file = enc.EncodeAll(file, nil)
			}
			p := filepath.Join(dir, filepath.FromSlash(t.Path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(p, file, 0o644); err != nil {
				return nil, err
			}
			c.Tensors = append(c.Tensors, t)
		}
		m.Cases = append(m.Cases, c)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := m.Seal(); err != nil {
		return nil, err
	}
	data, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644)
}

func mustBundle(tb testing.TB, b bundleSpec) string {
	tb.Helper()
	dir := tb.TempDir()
	if _, err := buildBundle(dir, b); err != nil {
		tb.Fatal(err)
	}
	return dir
}

func f32s(v ...float32) []byte { return npy.AppendFloat32s(nil, v) }
func i32s(v ...int32) []byte   { return npy.AppendInt32s(nil, v) }

func f16s(v ...float64) []byte {
	h := make([]uint16, len(v))
	for i, x := range v {
		h[i] = npy.F16FromF64(x)
	}
	return npy.AppendUint16s(nil, h)
}

func bf16s(v ...float64) []byte {
	h := make([]uint16, len(v))
	for i, x := range v {
		h[i] = npy.BF16FromF64(x)
	}
	return npy.AppendUint16s(nil, h)
}

// ramp returns n float32 values 0, 0.5, 1, ...
func ramp(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i) / 2
	}
	return v
}

// baseSpec is a small two-case bundle.
func baseSpec() bundleSpec {
	return bundleSpec{
		suiteVersion: "1.0.0",
		seed:         7,
		cases: []caseSpec{
			{
				id: "mm-1", op: "matmul", split: "public",
				params: `{"m":3,"k":4,"n":5,"opts":{"b_layout":"KN","tiles":[16,16]}}`,
				tensors: []tensorSpec{
					{name: "a", role: "input", dtype: "float32", shape: []int64{3, 4}, data: f32s(ramp(12)...)},
					{name: "c", role: "golden", dtype: "float32", shape: []int64{3, 4, 5}, data: f32s(ramp(60)...), tol: `{"atol":0,"rtol":1e-5}`},
					{name: "idx", role: "input", dtype: "int32", shape: []int64{4}, data: i32s(0, 1, -1, 7)},
				},
			},
			{
				id: "sm-1", op: "softmax", split: "public", params: `{"n":4}`, info: `{"note":"x"}`,
				tensors: []tensorSpec{
					{name: "y16", role: "golden", dtype: "float16", shape: []int64{2, 2}, data: f16s(1, 0.5, -2, 0)},
					{name: "ybf", role: "golden", dtype: "bfloat16", shape: []int64{4}, data: bf16s(1, 0.25, 3, -1)},
				},
			},
		},
	}
}
