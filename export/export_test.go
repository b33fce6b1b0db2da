package export

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/safetensors"
	"github.com/goldset/goldset/suite"
)

// oneRecipe has one small case of every op (the paged and ragged layouts
// of dsa_indexer both).
const oneRecipe = `{
 "name": "export-one", "version": "0.1.0", "spec_version": 1, "seed": 7,
 "cases": [
  {"id": "mm-kn", "op": "matmul", "split": "public", "params": {"m": 3, "k": 37, "n": 5, "dtype": "bfloat16"}},
  {"id": "sm", "op": "softmax", "split": "public", "params": {"m": 9, "n": 300, "dtype": "float16", "outlier_rows": 3}},
  {"id": "rc", "op": "reshape_and_cache", "split": "public", "params": {"t": 10, "hkv": 1, "d": 8, "bs": 4, "nb": 5, "dtype": "bfloat16", "skip_frac": 0.3}},
  {"id": "pa", "op": "paged_attention", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "bfloat16", "context_lens": [4, 5, 1, 13]}},
  {"id": "ua", "op": "unified_attention", "split": "public", "params": {"hq": 4, "hkv": 1, "d": 8, "bs": 4, "dtype": "bfloat16", "graph_pad": true, "rows": [{"q_len": 1, "context": 9}, {"q_len": 3, "context": 7}, {"q_len": 5, "context": 13}]}},
  {"id": "quest", "op": "quest", "split": "public", "params": {"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [16, 24], "k": 3}},
  {"id": "ic", "op": "dsa_index_cache", "split": "public", "params": {"t": 70, "di": 16, "nb": 3, "skip_frac": 0.2}},
  {"id": "bh", "op": "block_header", "split": "public", "params": {"seq_lens": [130, 64, 65], "extra_blocks": 2, "shuffle": true}},
  {"id": "ix", "op": "dsa_indexer", "split": "public", "params": {"seq_lens": [1, 63, 65], "hi": 4, "di": 16, "k": 64}},
  {"id": "ix-ragged", "op": "dsa_indexer", "split": "public", "params": {"layout": "ragged", "ctx_lens": [0, 70], "query_lens": [5, 3], "hi": 4, "di": 16, "k": 40}},
  {"id": "sa", "op": "dsa_sparse_attention", "split": "public", "params": {"seq_lens": [70, 100], "next_n": 2, "h": 2, "dc": 16, "dr": 4, "k": 32, "index_hi": 2, "index_di": 8}},
  {"id": "mxq", "op": "mxfp4_quantize", "split": "public", "params": {"rows": 4, "k": 96, "dtype": "bfloat16"}},
  {"id": "mxdq", "op": "mxfp4_dequantize", "split": "public", "params": {"rows": 1, "k": 96, "dtype": "bfloat16"}},
  {"id": "fp8", "op": "mxfp4_to_fp8", "split": "public", "params": {"rows": 3, "k": 96}},
  {"id": "gemm", "op": "mxfp4_gemm", "split": "public", "params": {"m": 3, "n": 5, "k": 96}},
  {"id": "a4w4", "op": "mxfp4_gemm_a4w4", "split": "public", "params": {"m": 2, "n": 4, "k": 256}},
  {"id": "w4a8", "op": "mxfp4_gemm_w4a8", "split": "public", "params": {"m": 3, "n": 3, "k": 160}},
  {"id": "moe", "op": "mxfp4_moe", "split": "public", "params": {"t": 6, "hd": 64, "i": 32, "e": 4, "topk": 2}}
 ]
}`

var (
	bundleOnce sync.Once
	bundleDir_ string
	bundleErr  error
)

// testBundle builds oneRecipe once into a temporary directory.
func testBundle(t testing.TB) string {
	t.Helper()
	bundleOnce.Do(func() {
		r, err := manifests.ParseRecipe("export-one", []byte(oneRecipe))
		if err != nil {
			bundleErr = err
			return
		}
		dir, err := os.MkdirTemp("", "goldset-export-test-")
		if err != nil {
			bundleErr = err
			return
		}
		bw, err := manifests.CreateBundle(filepath.Join(dir, r.Name))
		if err != nil {
			bundleErr = err
			return
		}
		defer bw.Abort()
		m, err := suite.Build(context.Background(), r, suite.BundleSink{W: bw}, suite.Options{})
		if err == nil {
			err = bw.Commit(m)
		}
		bundleDir_, bundleErr = filepath.Join(dir, r.Name), err
	})
	if bundleErr != nil {
		t.Fatal(bundleErr)
	}
	return bundleDir_
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bundleDir_ != "" {
		os.RemoveAll(filepath.Dir(bundleDir_))
	}
	os.Exit(code)
}

func TestRecipeCoversEveryOp(t *testing.T) {
	m, err := manifests.ReadManifest(testBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, c := range m.Cases {
		ops = append(ops, c.Op)
	}
	for _, op := range suite.Ops() {
		if !slices.Contains(ops, op) {
			t.Errorf("op %s has no case in oneRecipe", op)
		}
	}
}

// readTree returns every file under dir by relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// flashinferSkips are the ops whose cases FlashInfer Trace cannot hold
// (uint8, float8_e8m0fnu or packed float4 tensors).
var flashinferSkips = []string{"dsa_index_cache", "mxfp4_quantize", "mxfp4_dequantize", "mxfp4_to_fp8",
	"mxfp4_gemm", "mxfp4_gemm_a4w4", "mxfp4_gemm_w4a8", "mxfp4_moe"}

func TestExportImportEveryFormat(t *testing.T) {
	b := testBundle(t)
	m, err := manifests.ReadManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x")
			res, err := Export(context.Background(), Options{Bundle: b, Out: out, Format: f})
			if err != nil {
				t.Fatal(err)
			}
			// Determinism: a second export is byte-identical.
			out2 := filepath.Join(t.TempDir(), "y")
			if _, err := Export(context.Background(), Options{Bundle: b, Out: out2, Format: f}); err != nil {
				t.Fatal(err)
			}
			t1, t2 := readTree(t, out), readTree(t, out2)
			if len(t1) != len(t2) || len(t1) != res.Files {
				t.Fatalf("%d and %d files, result says %d", len(t1), len(t2), res.Files)
			}
			for p, x := range t1 {
				if !bytes.Equal(x, t2[p]) {
					t.Errorf("%s differs between two exports", p)
				}
			}
			// Which cases: all of them, but FlashInfer's unrepresentable ones.
			want := 0
			for _, c := range m.Cases {
				skip := f == FlashInferTrace && (slices.Contains(flashinferSkips, c.Op) || c.ID == "ix")
				if slices.Contains(res.Cases, c.ID) == skip {
					t.Errorf("case %s (%s): exported %v", c.ID, c.Op, !skip)
				}
				if !skip {
					want += len(c.Tensors)
				}
			}
			ir, err := Import(context.Background(), ImportOptions{Dir: out, Bundle: b})
			if err != nil {
				t.Fatal(err)
			}
			if !ir.OK || ir.Tensors != want {
				t.Fatalf("import: ok %v, %d tensors proved (want %d): %v", ir.OK, ir.Tensors, want, ir.Problems)
			}
		})
	}
}

// TestImportReportsTampering flips one data byte of one exported tensor
// file in each format, and edits the carried manifest: import must name
// the file and the tensor.
func TestImportReportsTampering(t *testing.T) {
	b := testBundle(t)
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x")
			if _, err := Export(context.Background(), Options{Bundle: b, Out: out, Format: f, Cases: []string{"mm-kn"}}); err != nil {
				t.Fatal(err)
			}
			var idx Index
			raw, _ := os.ReadFile(filepath.Join(out, IndexFile))
			if err := jsonUnmarshal(raw, &idx); err != nil {
				t.Fatal(err)
			}
			var target File
			for _, x := range idx.Files {
				if slices.Contains(x.Tensors, "a") {
					target = x
				}
			}
			p := filepath.Join(out, filepath.FromSlash(target.Path))
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)-1] ^= 1 // the last byte: data, never a header
			if strings.HasSuffix(p, ".safetensors") {
				// The last tensor in a safetensors file is the one with the lowest dtype rank; flip a byte of "a" instead.
				data[len(data)-1] ^= 1
				data = flipTensorByte(t, data, "a")
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			ir, err := Import(context.Background(), ImportOptions{Dir: out})
			if err != nil {
				t.Fatal(err)
			}
			var fileProb, tensorProb bool
			for _, pr := range ir.Problems {
				fileProb = fileProb || pr.Path == target.Path && pr.Tensor == "" && strings.Contains(pr.What, "changed")
				tensorProb = tensorProb || pr.Tensor == "a" && pr.Case == "mm-kn" && strings.Contains(pr.What, "differs")
			}
			if ir.OK || !fileProb || !tensorProb {
				t.Fatalf("tampered %s: ok %v, file reported %v, tensor reported %v: %v", target.Path, ir.OK, fileProb, tensorProb, ir.Problems)
			}
			// An edited carried manifest is reported by its digest.
			mp := filepath.Join(out, ManifestFile)
			mb, _ := os.ReadFile(mp)
			os.WriteFile(mp, bytes.Replace(mb, []byte(`"split": "public"`), []byte(`"split": "benchmark"`), 1), 0o644)
			ir, err = Import(context.Background(), ImportOptions{Dir: out})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(ir.Problems, func(p manifests.Problem) bool { return p.Path == ManifestFile && strings.Contains(p.What, "edited") }) {
				t.Fatalf("edited manifest not reported: %v", ir.Problems)
			}
			// Data after the index's JSON value: not an index goldset wrote.
			ip := filepath.Join(out, IndexFile)
			os.WriteFile(ip, append(raw, "{}\n"...), 0o644)
			if _, err := Import(context.Background(), ImportOptions{Dir: out}); !errors.Is(err, ErrNotExport) || !strings.Contains(err.Error(), "data after") {
				t.Fatalf("index with trailing data: %v", err)
			}
		})
	}
}

func TestExportRefuses(t *testing.T) {
	b := testBundle(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "keep"), []byte("mine"), 0o644)
	if _, err := Export(context.Background(), Options{Bundle: b, Out: full, Format: Safetensors}); !errors.Is(err, ErrExists) {
		t.Fatalf("non-empty out: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(full, "keep")); string(got) != "mine" {
		t.Fatal("an existing file was touched")
	}
	if _, err := Export(context.Background(), Options{Bundle: b, Out: filepath.Join(dir, "a"), Format: Safetensors, Cases: []string{"nope"}}); !errors.Is(err, ErrNoCase) {
		t.Fatalf("unknown case: %v", err)
	}
	if _, err := Export(context.Background(), Options{Bundle: b, Out: filepath.Join(dir, "b"), Format: FlashInferTrace, Cases: []string{"mxq"}}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("mxfp4 as FlashInfer Trace: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("failed exports left %d entries", len(ents)-1)
	}
	if _, err := Import(context.Background(), ImportOptions{Dir: dir}); !errors.Is(err, ErrNotExport) {
		t.Fatalf("import of a plain directory: %v", err)
	}
}

// TestMsOpSTSchema validates every case file against the JSON Schema of
// what is written, and shows the validator rejects a case without "op".
func TestMsOpSTSchema(t *testing.T) {
	raw, err := os.ReadFile("testdata/msopst_case.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	sv, err := decodeJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	schema := sv.(map[string]any)
	out := filepath.Join(t.TempDir(), "x")
	if _, err := Export(context.Background(), Options{Bundle: testBundle(t), Out: out, Format: MsOpST}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*", "*_case.json"))
	if len(files) != len(suite.Ops()) {
		t.Fatalf("%d case files for %d ops", len(files), len(suite.Ops()))
	}
	for _, p := range files {
		b, _ := os.ReadFile(p)
		v, err := decodeJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(schema, v, filepath.Base(p)); err != nil {
			t.Errorf("%v", err)
		}
		delete(v.([]any)[0].(map[string]any), "op")
		if validate(schema, v, "") == nil {
			t.Errorf("%s without op passes the schema", p)
		}
	}
}

// flipTensorByte flips the first data byte of tensor name in a
// safetensors file.
func flipTensorByte(t *testing.T, data []byte, name string) []byte {
	t.Helper()
	h, err := safetensors.ReadHeader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	info, ok := h.Tensor(name)
	if !ok || info.End == info.Begin {
		t.Fatalf("no data of %s", name)
	}
	data[h.DataStart+info.Begin] ^= 1
	return data
}

// TestFlashInferTraceShape checks the trace against flashinfer-bench's
// schema rules that need no Python: every workload names a definition,
// binds exactly its var axes with the sizes of the safetensors tensors it
// points at, and run()'s parameters are the inputs in order.
func TestFlashInferTraceShape(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x")
	if _, err := Export(context.Background(), Options{Bundle: testBundle(t), Out: out, Format: FlashInferTrace}); err != nil {
		t.Fatal(err)
	}
	type tspec struct {
		Shape []string `json:"shape"`
		DType string   `json:"dtype"`
	}
	type def struct {
		Name, Reference string
		OpType          string `json:"op_type"`
		Axes            map[string]struct{ Type string }
		Inputs, Outputs map[string]tspec
	}
	defs := map[string]def{}
	paths, _ := filepath.Glob(filepath.Join(out, "definitions", "*.json"))
	for _, p := range paths {
		var d def
		raw, _ := os.ReadFile(p)
		if err := jsonUnmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		var order []string
		dec := jsonDecoderKeys(t, raw, "inputs")
		order = append(order, dec...)
		if !strings.Contains(d.Reference, "def run("+strings.Join(order, ", ")+"):") || d.OpType == "" {
			t.Errorf("%s: run() does not take the inputs %v in order, or no op_type", p, order)
		}
		for n, ts := range d.Inputs {
			for _, a := range ts.Shape {
				if d.Axes[a].Type != "var" {
					t.Errorf("%s: input %s axis %s is not a var axis", p, n, a)
				}
			}
		}
		defs[d.Name] = d
	}
	lines := 0
	wl, _ := filepath.Glob(filepath.Join(out, "workloads", "*.jsonl"))
	for _, p := range wl {
		raw, _ := os.ReadFile(p)
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			lines++
			var tr struct {
				Definition string
				Workload   struct {
					UUID   string
					Axes   map[string]int64
					Inputs map[string]struct {
						Type, Path string
						TensorKey  string `json:"tensor_key"`
					}
				}
				Solution, Evaluation any
			}
			if err := jsonUnmarshal([]byte(line), &tr); err != nil {
				t.Fatal(err)
			}
			d, ok := defs[tr.Definition]
			if !ok || tr.Solution != nil || tr.Evaluation != nil || tr.Workload.UUID == "" || len(tr.Workload.Axes) != len(d.Axes) {
				t.Fatalf("%s: bad workload trace %s", p, line)
			}
			for n, in := range tr.Workload.Inputs {
				raw, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(in.Path)))
				if err != nil || in.Type != "safetensors" {
					t.Fatalf("%s: input %s: %v", p, n, err)
				}
				h, err := safetensors.ReadHeader(bytes.NewReader(raw), int64(len(raw)))
				if err != nil {
					t.Fatal(err)
				}
				info, ok := h.Tensor(in.TensorKey)
				if !ok || len(info.Shape) != len(d.Inputs[n].Shape) {
					t.Fatalf("%s: input %s not in %s", p, n, in.Path)
				}
				for i, a := range d.Inputs[n].Shape {
					if tr.Workload.Axes[a] != info.Shape[i] {
						t.Errorf("%s: axis %s = %d, tensor %s dim %d is %d", p, a, tr.Workload.Axes[a], n, i, info.Shape[i])
					}
				}
			}
		}
	}
	if lines != 9 || len(defs) != 9 {
		t.Fatalf("%d workloads, %d definitions; want 9 and 9", lines, len(defs))
	}
}

// TestImportBrokenHeader breaks a safetensors header: the one-pass read
// must still hash the whole file (the index's sha256 differs) and prove
// no tensor of it.
func TestImportBrokenHeader(t *testing.T) {
	b := testBundle(t)
	out := filepath.Join(t.TempDir(), "x")
	if _, err := Export(context.Background(), Options{Bundle: b, Out: out, Format: Safetensors, Cases: []string{"mm-kn"}}); err != nil {
		t.Fatal(err)
	}
	var idx Index
	raw, _ := os.ReadFile(filepath.Join(out, IndexFile))
	if err := jsonUnmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	target := idx.Files[slices.IndexFunc(idx.Files, func(f File) bool { return strings.HasSuffix(f.Path, ".safetensors") })]
	p := filepath.Join(out, filepath.FromSlash(target.Path))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[8] = '[' // the header's JSON object opens with '{'
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ir, err := Import(context.Background(), ImportOptions{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	var fileProb, headerProb bool
	for _, pr := range ir.Problems {
		fileProb = fileProb || pr.Path == target.Path && strings.Contains(pr.What, "changed")
		headerProb = headerProb || pr.Path == target.Path && strings.Contains(pr.What, "safetensors")
	}
	if ir.OK || !fileProb || !headerProb || ir.Tensors != 0 {
		t.Fatalf("broken header: ok %v, file reported %v, header reported %v, %d tensors proved: %v", ir.OK, fileProb, headerProb, ir.Tensors, ir.Problems)
	}
}

// TestExportCarriesManifest: the carried manifest is the bundle's
// manifest.json byte for byte, whether the bundle is named by its
// directory or by its manifest.json.
func TestExportCarriesManifest(t *testing.T) {
	b := testBundle(t)
	want, err := os.ReadFile(filepath.Join(b, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i, src := range []string{b, filepath.Join(b, "manifest.json")} {
		out := filepath.Join(t.TempDir(), "x"+strconv.Itoa(i))
		if _, err := Export(context.Background(), Options{Bundle: src, Out: out, Format: Safetensors, Cases: []string{"mm-kn"}}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("bundle %s: carried manifest differs from manifest.json (%d vs %d bytes)", src, len(got), len(want))
		}
	}
}
