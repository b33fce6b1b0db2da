package diff_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goldset/goldset/diff"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func setF32(ts *tensorSpec, flat int, v float32) {
	binary.LittleEndian.PutUint32(ts.data[4*flat:], math.Float32bits(v))
}

func setU16(ts *tensorSpec, flat int, bits uint16) {
	binary.LittleEndian.PutUint16(ts.data[2*flat:], bits)
}

func run(t *testing.T, old, new bundleSpec, opts diff.Options) *diff.Report {
	t.Helper()
	r, err := diff.Bundles(context.Background(), mustBundle(t, old), mustBundle(t, new), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// onlyTensor returns the single listed tensor diff of the report.
func onlyTensor(t *testing.T, r *diff.Report) (string, *diff.TensorDiff) {
	t.Helper()
	var found []*diff.TensorDiff
	var ids []string
	for i := range r.Cases {
		for j := range r.Cases[i].Tensors {
			found = append(found, &r.Cases[i].Tensors[j])
			ids = append(ids, r.Cases[i].ID)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one changed tensor, got %d: %+v", len(found), r.Cases)
	}
	return ids[0], found[0]
}

func paths(ch []diff.Change) []string {
	var p []string
	for _, c := range ch {
		p = append(p, c.Path)
	}
	return p
}

func TestIdentical(t *testing.T) {
	b := baseSpec()
	r := run(t, b, b.clone(), diff.Options{})
	if !r.Identical() {
		t.Fatalf("identical bundles reported different: %+v", r)
	}
	want := diff.Counts{Cases: diff.Tally{Unchanged: 2}, Tensors: diff.Tally{Unchanged: 5}}
	if r.Counts != want {
		t.Errorf("counts %+v, want %+v", r.Counts, want)
	}
	if len(r.Cases) != 0 || len(r.Manifest) != 0 {
		t.Errorf("listed changes in identical bundles: %+v %+v", r.Manifest, r.Cases)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "identical: 2 cases, 5 tensors\n" {
		t.Errorf("text %q", got)
	}
}

func TestValueChanges(t *testing.T) {
	tests := []struct {
		name   string
		set    map[int]float32 // flat index of c [3,4,5] -> new value
		want   diff.Values
		chunks []int
	}{
		{
			name: "one element",
			set:  map[int]float32{1*20 + 2*5 + 3: 99},
			want: diff.Values{Elements: 60, Changed: 1, Share: 1.0 / 60, MaxAbs: 99 - 16.5, MaxRel: (99 - 16.5) / 16.5,
				First: []int64{1, 2, 3}, Worst: []int64{1, 2, 3}, MaxRelAt: []int64{1, 2, 3}},
		},
		{
			// first, worst (abs) and max-rel (old value 0, floored) are three different elements.
			name: "first worst and rel apart",
			set:  map[int]float32{0: 1e-3, 7: 3.5 + 0.25, 59: 29.5 + 4},
			want: diff.Values{Elements: 60, Changed: 3, Share: 3.0 / 60, MaxAbs: 4, MaxRel: diff.Number(float32ToF64(1e-3) / 1e-6),
				First: []int64{0, 0, 0}, Worst: []int64{2, 3, 4}, MaxRelAt: []int64{0, 0, 0}},
		},
		{
			name: "ties keep the first",
			set:  map[int]float32{10: 5 + 1, 30: 15 + 1, 31: 15.5 - 1},
			want: diff.Values{Elements: 60, Changed: 3, Share: 3.0 / 60, MaxAbs: 1, MaxRel: 1.0 / 5,
				First: []int64{0, 2, 0}, Worst: []int64{0, 2, 0}, MaxRelAt: []int64{0, 2, 0}},
		},
		{
			name: "nan and inf",
			set:  map[int]float32{4: float32(math.NaN()), 5: float32(math.Inf(1)), 6: 3 + 0.5},
			want: diff.Values{Elements: 60, Changed: 3, Share: 3.0 / 60, MaxAbs: 0.5, MaxRel: 0.5 / 3,
				NaNMismatch: 1, InfMismatch: 1, FirstNonFinite: []int64{0, 0, 4},
				First: []int64{0, 0, 4}, Worst: []int64{0, 1, 1}, MaxRelAt: []int64{0, 1, 1}},
		},
		{
			// bits differ, values equal: counted, change 0.
			name: "negative zero",
			set:  map[int]float32{0: float32(math.Copysign(0, -1))},
			want: diff.Values{Elements: 60, Changed: 1, Share: 1.0 / 60,
				First: []int64{0, 0, 0}, Worst: []int64{0, 0, 0}, MaxRelAt: []int64{0, 0, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := baseSpec()
			nb := old.clone()
			for i, v := range tc.set {
				setF32(nb.tensor("mm-1", "c"), i, v)
			}
			oldDir, newDir := mustBundle(t, old), mustBundle(t, nb)
			var first *diff.Report
			// Chunk sizes that split the tensor unevenly, and several job counts, give the same report.
			for _, opts := range []diff.Options{{}, {ChunkElems: 7, Jobs: 3}, {ChunkElems: 1, Jobs: 8}} {
				r, err := diff.Bundles(context.Background(), oldDir, newDir, opts)
				if err != nil {
					t.Fatal(err)
				}
				if r.Identical() {
					t.Fatal("changed bundle reported identical")
				}
				id, td := onlyTensor(t, r)
				if id != "mm-1" || td.Name != "c" || td.Status != diff.StatusChanged || !td.DataChanged {
					t.Fatalf("got %s/%+v", id, td)
				}
				if td.Values == nil {
					t.Fatalf("no values: %s", td.ValuesSkipped)
				}
				if !reflect.DeepEqual(*td.Values, tc.want) {
					t.Errorf("opts %+v: values\n got %+v\nwant %+v", opts, *td.Values, tc.want)
				}
				if first == nil {
					first = r
				} else if !reflect.DeepEqual(r, first) {
					t.Errorf("report depends on options %+v", opts)
				}
			}
			want := diff.Counts{Cases: diff.Tally{Unchanged: 1, Changed: 1}, Tensors: diff.Tally{Unchanged: 4, Changed: 1}}
			if first.Counts != want {
				t.Errorf("counts %+v, want %+v", first.Counts, want)
			}
		})
	}
}

func float32ToF64(x float32) float64 { return float64(x) }

func TestHalfValues(t *testing.T) {
	tests := []struct {
		name, tensor string
		flat         int
		bits         uint16
		want         diff.Values
	}{
		{
			// 1.0 -> next float16 up: exactly 2**-10.
			name: "fp16 one ulp", tensor: "y16", flat: 0, bits: npy.F16FromF64(1 + 0x1p-10),
			want: diff.Values{Elements: 4, Changed: 1, Share: 0.25, MaxAbs: 0x1p-10, MaxRel: 0x1p-10,
				First: []int64{0, 0}, Worst: []int64{0, 0}, MaxRelAt: []int64{0, 0}},
		},
		{
			// -2 -> 65504 (fp16 max).
			name: "fp16 max", tensor: "y16", flat: 2, bits: 0x7bff,
			want: diff.Values{Elements: 4, Changed: 1, Share: 0.25, MaxAbs: 65506, MaxRel: 65506.0 / 2,
				First: []int64{1, 0}, Worst: []int64{1, 0}, MaxRelAt: []int64{1, 0}},
		},
		{
			name: "fp16 nan vs number", tensor: "y16", flat: 3, bits: 0x7e00,
			want: diff.Values{Elements: 4, Changed: 1, Share: 0.25, NaNMismatch: 1, FirstNonFinite: []int64{1, 1},
				First: []int64{1, 1}},
		},
		{
			// 0.25 -> one bf16 ulp up: 2**-2 * 2**-7.
			name: "bf16 one ulp", tensor: "ybf", flat: 1, bits: npy.BF16FromF64(0.25 + 0x1p-9),
			want: diff.Values{Elements: 4, Changed: 1, Share: 0.25, MaxAbs: 0x1p-9, MaxRel: 0x1p-7,
				First: []int64{1}, Worst: []int64{1}, MaxRelAt: []int64{1}},
		},
		{
			// 3 -> bf16 -inf.
			name: "bf16 inf", tensor: "ybf", flat: 2, bits: 0xff80,
			want: diff.Values{Elements: 4, Changed: 1, Share: 0.25, InfMismatch: 1, FirstNonFinite: []int64{2},
				First: []int64{2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := baseSpec()
			nb := old.clone()
			setU16(nb.tensor("sm-1", tc.tensor), tc.flat, tc.bits)
			_, td := onlyTensor(t, run(t, old, nb, diff.Options{}))
			if td.Values == nil {
				t.Fatalf("no values: %s", td.ValuesSkipped)
			}
			if !reflect.DeepEqual(*td.Values, tc.want) {
				t.Errorf("values\n got %+v\nwant %+v", *td.Values, tc.want)
			}
		})
	}
}

func TestIntegerExact(t *testing.T) {
	old := baseSpec()
	nb := old.clone()
	// 0 -> INT32_MAX and 7 -> INT32_MIN: the largest change is exact.
	nb.tensor("mm-1", "idx").data = i32s(math.MaxInt32, 1, -1, math.MinInt32)
	_, td := onlyTensor(t, run(t, old, nb, diff.Options{}))
	want := diff.Values{Elements: 4, Changed: 2, Share: 0.5, MaxAbs: 7 + 2147483648, MaxRel: 2147483647 / 1e-6,
		First: []int64{0}, Worst: []int64{3}, MaxRelAt: []int64{0}, Integer: true}
	if td.Values == nil || !reflect.DeepEqual(*td.Values, want) {
		t.Errorf("values\n got %+v\nwant %+v", td.Values, want)
	}
}

func TestMetadataChanges(t *testing.T) {
	tests := []struct {
		name        string
		edit        func(b *bundleSpec)
		wantPaths   []string
		wantData    bool
		wantSkipped string
		wantValues  bool
	}{
		{
			name: "shape",
			edit: func(b *bundleSpec) {
				ts := b.tensor("mm-1", "a")
				ts.shape = []int64{4, 3}
				setF32(ts, 0, 5)
			},
			wantPaths: []string{"shape"}, wantData: true, wantSkipped: "shape changed",
		},
		{
			name: "shape with same bytes",
			edit: func(b *bundleSpec) { b.tensor("mm-1", "a").shape = []int64{2, 6} },
			// The header (and so the sha256) changes, the values do not.
			wantPaths: []string{"shape"}, wantData: true, wantSkipped: "shape changed",
		},
		{
			name: "dtype",
			edit: func(b *bundleSpec) {
				ts := b.tensor("sm-1", "y16")
				ts.dtype = "bfloat16"
				ts.data = bf16s(1, 0.5, -2, 0)
			},
			wantPaths: []string{"dtype"}, wantData: true, wantSkipped: "dtype changed",
		},
		{
			name: "dtype and size",
			edit: func(b *bundleSpec) {
				ts := b.tensor("sm-1", "y16")
				ts.dtype = "float32"
				ts.data = f32s(1, 0.5, -2, 0)
			},
			wantPaths: []string{"dtype", "bytes"}, wantData: true, wantSkipped: "dtype changed",
		},
		{
			name:      "tolerance",
			edit:      func(b *bundleSpec) { b.tensor("mm-1", "c").tol = `{"atol":1e-6,"rtol":1e-5}` },
			wantPaths: []string{"tolerance.atol"},
		},
		{
			name:      "tolerance added",
			edit:      func(b *bundleSpec) { b.tensor("sm-1", "ybf").tol = `{"rtol":0.008}` },
			wantPaths: []string{"tolerance.rtol"},
		},
		{
			name:      "role",
			edit:      func(b *bundleSpec) { b.tensor("mm-1", "idx").role = "aux" },
			wantPaths: []string{"role"},
		},
		{
			// Same uncompressed bytes: no data change, nothing read.
			name:      "compression",
			edit:      func(b *bundleSpec) { b.tensor("mm-1", "c").zstd = true },
			wantPaths: []string{"path", "compression"},
		},
		{
			name: "compressed values",
			edit: func(b *bundleSpec) {
				ts := b.tensor("mm-1", "c")
				ts.zstd = true
				setF32(ts, 3, -1)
			},
			wantPaths: []string{"path", "compression"}, wantData: true, wantValues: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := baseSpec()
			nb := old.clone()
			tc.edit(&nb)
			r := run(t, old, nb, diff.Options{})
			_, td := onlyTensor(t, r)
			if got := paths(td.Changes); !slices.Equal(got, tc.wantPaths) {
				t.Errorf("changes %v (%v), want %v", got, td.Changes, tc.wantPaths)
			}
			if td.DataChanged != tc.wantData || td.ValuesSkipped != tc.wantSkipped || (td.Values != nil) != tc.wantValues {
				t.Errorf("data_changed %v skipped %q values %+v", td.DataChanged, td.ValuesSkipped, td.Values)
			}
			if r.Identical() || td.Status != diff.StatusChanged {
				t.Errorf("status %q, identical %v", td.Status, r.Identical())
			}
		})
	}
}

func TestTensorShapeChangeValues(t *testing.T) {
	old := baseSpec()
	nb := old.clone()
	ts := nb.tensor("mm-1", "a")
	ts.shape = []int64{4, 3}
	_, td := onlyTensor(t, run(t, old, nb, diff.Options{}))
	want := []diff.Change{{Path: "shape", Old: json.RawMessage(`[3,4]`), New: json.RawMessage(`[4,3]`)}}
	if !reflect.DeepEqual(td.Changes, want) {
		t.Errorf("changes %v, want %v", td.Changes, want)
	}
}

func TestCaseChanges(t *testing.T) {
	old := baseSpec()
	nb := old.clone()
	nb.suiteVersion = "1.1.0"
	nb.cases[0].params = `{"m":3,"k":4,"n":5,"opts":{"b_layout":"NK","tiles":[16,32]},"scale":0.125}`
	nb.cases[0].split = "hidden"
	nb.cases[1].info = ""
	r := run(t, old, nb, diff.Options{})
	if got := paths(r.Manifest); !slices.Equal(got, []string{"suite_version", "digest"}) {
		t.Errorf("manifest changes %v", got)
	}
	if c := r.Manifest[0]; string(c.Old) != `"1.0.0"` || string(c.New) != `"1.1.0"` {
		t.Errorf("suite_version %s", c)
	}
	if len(r.Cases) != 2 {
		t.Fatalf("cases %+v", r.Cases)
	}
	want := []diff.Change{
		{Path: "split", Old: json.RawMessage(`"public"`), New: json.RawMessage(`"hidden"`)},
		{Path: "params.opts.b_layout", Old: json.RawMessage(`"KN"`), New: json.RawMessage(`"NK"`)},
		{Path: "params.opts.tiles[1]", Old: json.RawMessage(`16`), New: json.RawMessage(`32`)},
		{Path: "params.scale", New: json.RawMessage(`0.125`)},
	}
	if !reflect.DeepEqual(r.Cases[0].Changes, want) {
		t.Errorf("case changes\n got %v\nwant %v", r.Cases[0].Changes, want)
	}
	wantInfo := []diff.Change{{Path: "info.note", Old: json.RawMessage(`"x"`)}}
	if !reflect.DeepEqual(r.Cases[1].Changes, wantInfo) {
		t.Errorf("info changes %v, want %v", r.Cases[1].Changes, wantInfo)
	}
	if len(r.Cases[0].Tensors) != 0 || r.Counts.Tensors.Unchanged != 5 {
		t.Errorf("tensors listed %+v counts %+v", r.Cases[0].Tensors, r.Counts)
	}
}

func TestCasesAndTensorsAddedRemoved(t *testing.T) {
	old := baseSpec()
	nb := old.clone()
	extra := caseSpec{id: "mm-2", op: "matmul", split: "public", params: `{}`, tensors: []tensorSpec{
		{name: "a", role: "input", dtype: "float32", shape: []int64{1}, data: f32s(1)},
	}}
	nb.cases = []caseSpec{nb.cases[0], extra} // sm-1 removed, mm-2 added
	nb.cases[0].tensors = append(nb.cases[0].tensors[1:], tensorSpec{name: "d", role: "aux", dtype: "int32", shape: []int64{}, data: i32s(3)})
	r := run(t, old, nb, diff.Options{})
	type row struct{ c, t, status string }
	var got []row
	for _, cd := range r.Cases {
		got = append(got, row{cd.ID, "", cd.Status})
		for _, td := range cd.Tensors {
			got = append(got, row{cd.ID, td.Name, td.Status})
		}
	}
	want := []row{
		{"mm-1", "", "changed"}, {"mm-1", "a", "removed"}, {"mm-1", "d", "added"},
		{"sm-1", "", "removed"}, {"sm-1", "y16", "removed"}, {"sm-1", "ybf", "removed"},
		{"mm-2", "", "added"}, {"mm-2", "a", "added"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n got %v\nwant %v", got, want)
	}
	wantCounts := diff.Counts{
		Cases:   diff.Tally{Changed: 1, Added: 1, Removed: 1},
		Tensors: diff.Tally{Unchanged: 2, Added: 2, Removed: 3},
	}
	if r.Counts != wantCounts {
		t.Errorf("counts %+v, want %+v", r.Counts, wantCounts)
	}
}

func TestValuesLimit(t *testing.T) {
	old := baseSpec()
	nb := old.clone()
	setF32(nb.tensor("mm-1", "c"), 1, 8)
	oldDir, newDir := mustBundle(t, old), mustBundle(t, nb)
	size := int64(128 + 60*4) // header + data of c
	tests := []struct {
		limit      int64
		wantValues bool
		skipped    string
	}{
		{0, true, ""},
		{size, true, ""},
		{size - 1, false, "larger than the values limit (367 bytes)"},
		{-1, false, "value comparison disabled"},
	}
	for _, tc := range tests {
		r, err := diff.Bundles(context.Background(), oldDir, newDir, diff.Options{ValuesLimit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		_, td := onlyTensor(t, r)
		if (td.Values != nil) != tc.wantValues || td.ValuesSkipped != tc.skipped || !td.DataChanged {
			t.Errorf("limit %d: values %+v skipped %q", tc.limit, td.Values, td.ValuesSkipped)
		}
	}
}

func TestFileErrors(t *testing.T) {
	old := baseSpec()
	nb := old.clone()
	setF32(nb.tensor("mm-1", "c"), 1, 8)
	setU16(nb.tensor("sm-1", "y16"), 0, 0)

	t.Run("missing tensor file", func(t *testing.T) {
		oldDir, newDir := mustBundle(t, old), mustBundle(t, nb)
		for _, rel := range []string{"mm-1/c.npy", "sm-1/y16.npy"} {
			if err := os.Remove(filepath.Join(newDir, rel)); err != nil {
				t.Fatal(err)
			}
		}
		for _, jobs := range []int{1, 4} {
			_, err := diff.Bundles(context.Background(), oldDir, newDir, diff.Options{Jobs: jobs})
			// The first missing file in manifest order is named, whatever the jobs.
			want := filepath.Join(newDir, "mm-1", "c.npy")
			if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), want) ||
				!strings.Contains(err.Error(), "new bundle") || !strings.Contains(err.Error(), `tensor "c"`) {
				t.Errorf("jobs %d: error %v, want one naming %s", jobs, err, want)
			}
		}
	})
	t.Run("missing manifest", func(t *testing.T) {
		dir := t.TempDir()
		_, err := diff.Bundles(context.Background(), dir, mustBundle(t, nb), diff.Options{})
		if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "manifest.json") || !strings.Contains(err.Error(), "old bundle") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		oldDir, newDir := mustBundle(t, old), mustBundle(t, nb)
		p := filepath.Join(oldDir, "mm-1", "c.npy")
		if err := os.Truncate(p, 200); err != nil {
			t.Fatal(err)
		}
		_, err := diff.Bundles(context.Background(), oldDir, newDir, diff.Options{ChunkElems: 8})
		if !errors.Is(err, manifests.ErrMismatch) || !errors.Is(err, npy.ErrTruncated) || !strings.Contains(err.Error(), p) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("header disagrees with manifest", func(t *testing.T) {
		oldDir, newDir := mustBundle(t, old), mustBundle(t, nb)
		other := mustBundle(t, func() bundleSpec {
			b := old.clone()
			b.tensor("mm-1", "c").shape = []int64{60}
			return b
		}())
		data, err := os.ReadFile(filepath.Join(other, "mm-1", "c.npy"))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(newDir, "mm-1", "c.npy")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = diff.Bundles(context.Background(), oldDir, newDir, diff.Options{})
		if !errors.Is(err, manifests.ErrMismatch) || !strings.Contains(err.Error(), p) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("not an npy file", func(t *testing.T) {
		oldDir, newDir := mustBundle(t, old), mustBundle(t, nb)
		p := filepath.Join(newDir, "mm-1", "c.npy")
		if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := diff.Bundles(context.Background(), oldDir, newDir, diff.Options{})
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("error %v", err)
		}
	})
}

func TestManifestFileArgument(t *testing.T) {
	old := baseSpec()
	nb := old.clone()
	setF32(nb.tensor("mm-1", "c"), 1, 8)
	oldDir, newDir := mustBundle(t, old), mustBundle(t, nb)
	r, err := diff.Bundles(context.Background(), filepath.Join(oldDir, "manifest.json"), filepath.Join(newDir, "manifest.json"), diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, td := onlyTensor(t, r); td.Values == nil || td.Values.Changed != 1 {
		t.Errorf("values %+v", td.Values)
	}
}

func TestCancelled(t *testing.T) {
	old := baseSpec()
	nb := old.clone()
	setF32(nb.tensor("mm-1", "c"), 1, 8)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := diff.Bundles(ctx, mustBundle(t, old), mustBundle(t, nb), diff.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestNumberJSON(t *testing.T) {
	for _, x := range []float64{0, 1.5, -2e-300, math.Inf(1), math.Inf(-1), math.NaN()} {
		b, err := json.Marshal(diff.Number(x))
		if err != nil {
			t.Fatal(err)
		}
		var y diff.Number
		if err := json.Unmarshal(b, &y); err != nil {
			t.Fatal(err)
		}
		if !(float64(y) == x || math.IsNaN(x) && math.IsNaN(float64(y))) {
			t.Errorf("%v -> %s -> %v", x, b, y)
		}
	}
	// compare's reports read "Inf" as +Inf; diff's must read the same forms.
	var y diff.Number
	if err := json.Unmarshal([]byte(`"Inf"`), &y); err != nil || !math.IsInf(float64(y), 1) {
		t.Errorf(`"Inf": %v, %v`, y, err)
	}
}

// richReport diffs two bundles that differ in every way the text shows.
func richReport(t *testing.T) *diff.Report {
	old := baseSpec()
	nb := old.clone()
	nb.seed = 8
	nb.cases[0].params = `{"m":3,"k":4,"n":5,"opts":{"b_layout":"NK","tiles":[16,16]}}`
	c := nb.tensor("mm-1", "c")
	setF32(c, 13, 100)
	setF32(c, 14, float32(math.NaN()))
	c.tol = `{"atol":0,"rtol":1e-4}`
	y := nb.tensor("sm-1", "y16")
	y.dtype = "bfloat16"
	y.data = bf16s(1, 0.5, -2, 0)
	nb.cases[1].tensors = nb.cases[1].tensors[:1]
	nb.cases = append(nb.cases, caseSpec{id: "pa-1", op: "paged_attention", split: "public", params: `{}`,
		tensors: []tensorSpec{{name: "lse", role: "golden", dtype: "float32", shape: []int64{2}, data: f32s(1, 2)}}})
	r := run(t, old, nb, diff.Options{Jobs: 2})
	r.Old, r.New = "OLD", "NEW"
	// Keep the goldens independent of the manifest's canonical encoding.
	for i := range r.Manifest {
		if r.Manifest[i].Path == "digest" {
			r.Manifest[i].Old, r.Manifest[i].New = json.RawMessage(`"old-digest"`), json.RawMessage(`"new-digest"`)
		}
	}
	return r
}

func TestGoldenOutput(t *testing.T) {
	r := richReport(t)
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	js = append(js, '\n')
	for name, got := range map[string][]byte{"report.txt": text.Bytes(), "report.json": js} {
		p := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(p, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (go test -update to refresh):\n%s", name, got)
		}
	}
	// The JSON reads back into the same report.
	var back diff.Report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalizeNaN(&back), normalizeNaN(r)) {
		t.Errorf("JSON round trip differs:\n%+v\n%+v", back, *r)
	}
}

// normalizeNaN re-marshals a report so NaN fields compare equal.
func normalizeNaN(r *diff.Report) string {
	b, _ := json.Marshal(r)
	return string(b)
}

func TestJobsDeterministic(t *testing.T) {
	old := baseSpec()
	nb := old.clone()
	setF32(nb.tensor("mm-1", "c"), 5, -3)
	setF32(nb.tensor("mm-1", "a"), 11, 0.125)
	nb.tensor("mm-1", "idx").data = i32s(0, 2, -1, 7)
	setU16(nb.tensor("sm-1", "y16"), 1, npy.F16FromF64(0.75))
	setU16(nb.tensor("sm-1", "ybf"), 3, npy.BF16FromF64(-1.5))
	oldDir, newDir := mustBundle(t, old), mustBundle(t, nb)
	var want *diff.Report
	for _, jobs := range []int{1, 2, 5, 16} {
		r, err := diff.Bundles(context.Background(), oldDir, newDir, diff.Options{Jobs: jobs, ChunkElems: 3})
		if err != nil {
			t.Fatal(err)
		}
		if r.Counts.Tensors.Changed != 5 {
			t.Fatalf("counts %+v", r.Counts)
		}
		for _, cd := range r.Cases {
			for _, td := range cd.Tensors {
				if td.Values == nil || td.Values.Changed != 1 {
					t.Errorf("%s/%s: values %+v", cd.ID, td.Name, td.Values)
				}
			}
		}
		if want == nil {
			want = r
		} else if !reflect.DeepEqual(r, want) {
			t.Errorf("jobs %d gives a different report", jobs)
		}
	}
}
