package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/internal/shutdown"
	"github.com/goldset/goldset/npy"
)

// writeBundle writes a one-case bundle with a float32 and an int32 tensor.
func writeBundle(t testing.TB, dir string, compress bool) *Manifest {
	t.Helper()
	bw, err := CreateBundleWith(dir, CreateOptions{Suite: "s", Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	m := &Manifest{SchemaVersion: SchemaVersion, Suite: "s", SuiteVersion: "1", SpecVersion: 1, Generator: "g", Seed: 3}
	c := Case{ID: "c1", Op: "matmul", Split: "public", Params: json.RawMessage(`{"m":2}`)}
	for _, tt := range []struct {
		name, dtype string
		shape       []int64
		data        []byte
	}{
		{"x", "float32", []int64{2, 2}, npy.AppendFloat32s(nil, []float32{1, 2, 3, 4})},
		{"i", "int32", []int64{3}, npy.AppendInt32s(nil, []int32{-1, 0, 7})},
	} {
		rel := "c1/" + tt.name + ".npy"
		if compress {
			rel += ".zst"
		}
		fw, err := bw.Create(rel, compress)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := NpyDType(tt.dtype)
		nw, err := npy.NewWriter(fw, npy.Header{Descr: d, Shape: tt.shape})
		if err != nil {
			t.Fatal(err)
		}
		nw.Write(tt.data)
		if err := nw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		tn := Tensor{Name: tt.name, Role: RoleInput, Path: rel, DType: tt.dtype, Shape: tt.shape, SHA256: fw.SHA256(), Bytes: fw.Bytes()}
		if compress {
			tn.Compression = "zstd"
		}
		c.Tensors = append(c.Tensors, tn)
	}
	m.Cases = []Case{c}
	if err := bw.Commit(m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBundleRoundTrip(t *testing.T) {
	for _, compress := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "b")
		m := writeBundle(t, dir, compress)
		got, err := ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != m.Digest || got.Digest == "" {
			t.Fatalf("digest %q, wrote %q", got.Digest, m.Digest)
		}
		if probs := Verify(dir, got, 2); len(probs) != 0 {
			t.Fatalf("compress=%v: verify: %v", compress, probs)
		}
		h, data, err := LoadTensor(dir, got.Case("c1").Tensor("x"))
		if err != nil || h.Descr != npy.Float32 || len(data) != 16 {
			t.Fatalf("LoadTensor: %v %v %d", err, h, len(data))
		}
		// Parent holds no temporaries after a commit.
		ents, _ := os.ReadDir(filepath.Dir(dir))
		if len(ents) != 1 {
			t.Errorf("leftovers beside the bundle: %v", ents)
		}
	}
}

func TestDigestIgnoresProvenance(t *testing.T) {
	m := &Manifest{SchemaVersion: 1, Suite: "s", Cases: []Case{}}
	a, _ := ComputeDigest(m)
	m.Provenance = &Provenance{Tool: "goldset", Created: "now", Host: "h"}
	b, _ := ComputeDigest(m)
	m.Seed = 1
	c, _ := ComputeDigest(m)
	if a != b || a == c {
		t.Fatalf("digest: %s %s %s", a, b, c)
	}
}

func TestVerifyFindsProblems(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	m := writeBundle(t, dir, false)
	x := filepath.Join(dir, "c1", "x.npy")
	orig, _ := os.ReadFile(x)
	for _, tc := range []struct {
		name   string
		mutate func()
		want   string
	}{
		{"missing", func() { os.Remove(x) }, "missing"},
		{"flipped", func() { b := bytes.Clone(orig); b[len(b)-1] ^= 0x80; os.WriteFile(x, b, 0o644) }, "sha256"},
		{"truncated", func() { os.WriteFile(x, orig[:len(orig)-4], 0o644) }, "size"},
		{"not npy", func() { os.WriteFile(x, []byte("hello"), 0o644) }, "header"},
	} {
		tc.mutate()
		probs := Verify(dir, m, 1)
		if len(probs) == 0 || !strings.Contains(probs[0].String(), tc.want) || !strings.Contains(probs[0].String(), "c1/x.npy") {
			t.Errorf("%s: problems %v, want one naming c1/x.npy and %q", tc.name, probs, tc.want)
		}
		os.WriteFile(x, orig, 0o644)
	}
	edited := *m
	edited.Seed = 99
	if probs := Verify(dir, &edited, 1); len(probs) != 1 || probs[0].Path != "manifest.json" {
		t.Errorf("edited manifest field: %v", probs)
	}
}

func TestParseManifestErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	m := writeBundle(t, dir, false)
	good, _ := m.Marshal()
	for _, tc := range []struct {
		name string
		edit func(string) string
		want error
	}{
		{"newer schema", func(s string) string { return strings.Replace(s, `"schema_version": 1`, `"schema_version": 99`, 1) }, ErrSchema},
		{"no schema", func(s string) string { return strings.Replace(s, `"schema_version": 1,`, ``, 1) }, ErrInvalid},
		{"escaping path", func(s string) string { return strings.Replace(s, `"c1/x.npy"`, `"../../etc/passwd"`, 1) }, ErrPath},
		{"absolute path", func(s string) string { return strings.Replace(s, `"c1/x.npy"`, `"/etc/passwd"`, 1) }, ErrPath},
		{"bad role", func(s string) string { return strings.Replace(s, `"input"`, `"output"`, 1) }, ErrInvalid},
		{"bad dtype", func(s string) string { return strings.Replace(s, `"float32"`, `"complex64"`, 1) }, ErrInvalid},
		{"negative dim", func(s string) string {
			return strings.Replace(s, "\"shape\": [\n            2,", "\"shape\": [\n            -2,", 1)
		}, ErrInvalid},
		{"unknown field", func(s string) string { return strings.Replace(s, `"suite": "s"`, `"suite": "s", "extra": 1`, 1) }, ErrInvalid},
		{"duplicate case", func(s string) string {
			return strings.Replace(s, `"cases": [`, `"cases": [{"id":"c1","op":"x","split":"public","params":{},"tensors":[]},`, 1)
		}, ErrInvalid},
		{"not json", func(s string) string { return s[:40] }, ErrInvalid},
	} {
		data := tc.edit(string(good))
		if data == string(good) {
			t.Fatalf("%s: edit did not apply", tc.name)
		}
		_, err := ParseManifest("m.json", []byte(data))
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "m.json") {
			t.Errorf("%s: err = %v, want %v naming the file", tc.name, err, tc.want)
		}
	}
}

func TestCreateBundleRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("x"), 0o644)
	if _, err := CreateBundle(dir); !errors.Is(err, ErrNotBundle) {
		t.Fatalf("err = %v, want ErrNotBundle", err)
	}
}

func TestStaleTemporariesAreCleaned(t *testing.T) {
	parent := t.TempDir()
	// A temporary of a process that cannot exist (pid far above pid_max).
	stale := filepath.Join(parent, ".b"+tmpMarker+"999999999-abc")
	os.MkdirAll(filepath.Join(stale, "c1"), 0o755)
	live := filepath.Join(parent, ".b"+tmpMarker+"1-abc") // pid 1 is alive
	os.MkdirAll(live, 0o755)
	bw, err := CreateBundle(filepath.Join(parent, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	if len(bw.Cleaned) != 1 || bw.Cleaned[0] != stale {
		t.Errorf("cleaned %v, want [%s]", bw.Cleaned, stale)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's temporary was removed")
	}
	bw.Abort()
	if _, err := os.Stat(bw.Dir()); !os.IsNotExist(err) {
		t.Errorf("Abort left %s", bw.Dir())
	}
}

func TestEmbeddedSuites(t *testing.T) {
	rs, err := Suites()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range rs {
		names[r.Name] = true
	}
	for _, want := range []string{"stage1-basic", "stage2-paged", "peer-sizes", "stage3-longbench"} {
		if !names[want] {
			t.Errorf("suite %s not embedded", want)
		}
	}
	if _, err := LookupSuite("nope"); !errors.Is(err, ErrUnknownSuite) {
		t.Errorf("LookupSuite(nope) = %v", err)
	}
}

func TestParseRecipeErrors(t *testing.T) {
	for _, tc := range []string{
		`{"name":"x","version":"1","spec_version":1,"cases":[]}`,
		`{"name":"x","version":"1","spec_version":2,"cases":[{"id":"a","op":"matmul","split":"public","params":{}}]}`,
		`{"name":"x","version":"1","spec_version":1,"cases":[{"id":"a","op":"matmul","split":"secret","params":{}}]}`,
		`{"name":"x","version":"1","spec_version":1,"cases":[{"id":"a","op":"matmul","split":"public","params":[]}]}`,
		`{"name":"x","version":"1","spec_version":1,"cases":[{"id":"a/b","op":"matmul","split":"public","params":{}}]}`,
		`{"name":"x","version":"1","spec_version":1,"cases":[{"id":"a","op":"m","split":"public","params":{}},{"id":"a","op":"m","split":"public","params":{}}]}`,
		`{"name":"x","version":"1","spec_version":1,"unknown":true,"cases":[{"id":"a","op":"m","split":"public","params":{}}]}`,
		`{"name":"x","version":"1","spec_version":1,"cases":[{"id":"a","op":"m","split":"public","params":{}}]} trailing`,
	} {
		if _, err := ParseRecipe("r.json", []byte(tc)); !errors.Is(err, ErrRecipe) || !strings.Contains(err.Error(), "r.json") {
			t.Errorf("%s: err = %v", tc, err)
		}
	}
}

func FuzzReadManifest(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "b")
	m := writeBundle(f, dir, false)
	good, _ := m.Marshal()
	f.Add(good)
	f.Add([]byte(`{"schema_version":1}`))
	f.Add([]byte(`{"schema_version":1,"suite":"s","cases":[{"id":"a","op":"x","tensors":[{"name":"t","role":"input","path":"../x","dtype":"float32","shape":[-1]}]}]}`))
	chained, _ := chainManifest().Marshal()
	f.Add(chained)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest("fuzz.json", data)
		if err != nil {
			return
		}
		// A manifest that parses re-validates and round-trips.
		if err := m.Validate(); err != nil {
			t.Fatalf("parsed manifest fails Validate: %v", err)
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := ParseManifest("again.json", out)
		if err != nil {
			t.Fatalf("re-marshalled manifest does not parse: %v", err)
		}
		d1, _ := ComputeDigest(m)
		d2, _ := ComputeDigest(m2)
		if d1 != d2 {
			t.Fatalf("digest changed on round trip")
		}
		for _, c := range m.Cases {
			for _, tn := range c.Tensors {
				if !filepath.IsLocal(filepath.FromSlash(tn.Path)) {
					t.Fatalf("non-local path accepted: %q", tn.Path)
				}
			}
		}
	})
}

func FuzzParseRecipe(f *testing.F) {
	for _, n := range []string{"stage1-basic", "stage2-paged"} {
		data, err := suiteFS.ReadFile("suites/" + n + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"name":"x","version":"1","spec_version":1,"cases":[{"id":"a","op":"m","split":"public","params":{}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRecipe("fuzz.json", data)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("parsed recipe fails Validate: %v", err)
		}
	})
}

func TestCommitReplacesOldBundle(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "b")
	writeBundle(t, dir, false)
	m := writeBundle(t, dir, true) // replace with the compressed variant
	got, err := ReadManifest(dir)
	if err != nil || got.Digest != m.Digest || got.Cases[0].Tensors[0].Compression != "zstd" {
		t.Fatalf("replaced bundle: %v %+v", err, got)
	}
	if probs := Verify(dir, got, 1); len(probs) != 0 {
		t.Fatal(probs)
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 {
		t.Errorf("leftovers after replacing: %v", ents)
	}
}

// A forced exit on a signal (internal/shutdown) removes a bundle being
// written and leaves a committed one alone: nothing partial at the target.
func TestForcedExitCleanup(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "b")
	m := writeBundle(t, dir, false) // committed: its cleanup is released
	bw, err := CreateBundleWith(filepath.Join(parent, "c"), CreateOptions{Suite: "s"})
	if err != nil {
		t.Fatal(err)
	}
	fw, _ := bw.Create("c1/x.npy", false)
	fw.Write([]byte("partial"))
	fw.Close()
	shutdown.RunCleanups()
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 || ents[0].Name() != "b" {
		t.Errorf("after a forced exit mid-write: %v, want only the committed bundle", ents)
	}
	if got, err := ReadManifest(dir); err != nil || got.Digest != m.Digest {
		t.Errorf("committed bundle after the cleanup: %v", err)
	}
	bw.Abort()
}

// TestProblemString: a problem without a path names its case (and tensor);
// gen --from and verify --regenerate printed "case not rebuilt" alone.
func TestProblemString(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Case: "c", Tensor: "t", Path: "c/t.npy", What: "bad"}, "c/t.npy: bad"},
		{Problem{Case: "c", What: "case not rebuilt"}, "c: case not rebuilt"},
		{Problem{Case: "c", Tensor: "t", What: "rebuilt tensor not in the manifest"}, "c/t: rebuilt tensor not in the manifest"},
		{Problem{What: "digest"}, "digest"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}
