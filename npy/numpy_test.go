package npy

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"github.com/goldset/goldset/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata/fixtures with testdata/make_fixtures.py (needs numpy)")

const (
	fixtureDir    = "testdata/fixtures"
	fixtureScript = "testdata/make_fixtures.py"
	pythonPath    = "/usr/bin/python3"
)

// fixtureCase mirrors one entry of cases.json written by make_fixtures.py.
type fixtureCase struct {
	Name  string  `json:"name"`
	Descr string  `json:"descr"`
	Shape []int64 `json:"shape"`
	Seed  uint64  `json:"seed"`
	Kind  string  `json:"kind"` // save, v2, v3, fortran, bigendian
}

// splitmix is the value stream of make_fixtures.py.
func splitmix(seed, k uint64) uint64 {
	z := seed<<32 | k
	z += 0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// fixtureData regenerates the data bytes of a fixture array.
func fixtureData(d DType, n int64, seed uint64) []byte {
	size := d.ItemSize()
	out := make([]byte, 0, n*int64(size))
	var w [8]byte
	for k := range uint64(n) {
		z := splitmix(seed, k)
		if d == Bool {
			out = append(out, byte(z&1))
			continue
		}
		binary.LittleEndian.PutUint64(w[:], z)
		out = append(out, w[:size]...)
	}
	return out
}

// numpyAvailable reports whether /usr/bin/python3 can import numpy; when it
// cannot, the test is skipped, or fails under GOLDSET_REQUIRE_TOOLS=1.
func requireNumpy(t *testing.T) {
	t.Helper()
	testenv.PythonNumpy(t)
}

func runScript(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(pythonPath, append([]string{fixtureScript}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", fixtureScript, args, err, out)
	}
}

func TestMain(m *testing.M) {
	flag.Parse()
	if *update {
		if out, err := exec.Command(pythonPath, fixtureScript, "--out", fixtureDir).CombinedOutput(); err != nil {
			os.Stderr.Write(out)
			panic("npy: -update: " + err.Error())
		}
	}
	os.Exit(m.Run())
}

func loadCases(t *testing.T, dir string) []fixtureCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []fixtureCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 10 {
		t.Fatalf("only %d cases in %s", len(doc.Cases), dir)
	}
	return doc.Cases
}

// checkFixtures compares this package with the numpy-written files in dir:
// our bytes for each array equal np.save's, and we read numpy's files back
// to the same header and data.
func checkFixtures(t *testing.T, dir string) {
	for _, c := range loadCases(t, dir) {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(dir, c.Name+".npy")
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			h := Header{Descr: DType(c.Descr), Shape: c.Shape}
			data := fixtureData(h.Descr, h.NumElems(), c.Seed)
			gotH, gotData, err := ReadFile(path)
			switch c.Kind {
			case "fortran":
				if !errors.Is(err, ErrFortranOrder) {
					t.Fatalf("ReadFile: %v, want ErrFortranOrder", err)
				}
				return
			case "bigendian":
				if !errors.Is(err, ErrUnsupportedDType) || !strings.Contains(err.Error(), "big-endian") {
					t.Fatalf("ReadFile: %v, want ErrUnsupportedDType (big-endian)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !gotH.equal(h) || !bytes.Equal(gotData, data) {
				t.Fatalf("ReadFile: header %+v, %d data bytes; want %+v, %d bytes, equal", gotH, len(gotData), h, len(data))
			}
			if c.Kind != "save" { // v2/v3 files: numpy.save itself writes 1.0
				if int(want[6]) != map[string]int{"v2": 2, "v3": 3}[c.Kind] {
					t.Fatalf("fixture version %d", want[6])
				}
				return
			}
			out := filepath.Join(t.TempDir(), c.Name+".npy")
			if err := WriteFile(out, h, data); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("WriteFile bytes differ from np.save:\n got %q\nwant %q", head(got), head(want))
			}
		})
	}
}

func head(b []byte) []byte { return b[:min(len(b), 160)] }

func TestNumpyFixtures(t *testing.T) { checkFixtures(t, fixtureDir) }

// headerCase mirrors headers.json: np.lib.format's header for a shape.
type headerCase struct {
	Descr   string  `json:"descr"`
	Fortran bool    `json:"fortran"`
	Shape   []int64 `json:"shape"`
	Hex     string  `json:"hex"`
}

func checkHeaders(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []headerCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	residues := map[int]bool{}
	for _, c := range cases {
		want, err := hex.DecodeString(c.Hex)
		if err != nil {
			t.Fatal(err)
		}
		h := Header{Descr: DType(c.Descr), Fortran: c.Fortran, Shape: c.Shape}
		got, err := EncodeHeader(h)
		if err != nil {
			t.Fatalf("%+v: %v", h, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("EncodeHeader(%+v):\n got %q\nwant %q", h, got, want)
		}
		dictLen := len(strings.TrimRight(string(want[PreambleLen1:]), " \n"))
		residues[(PreambleLen1+dictLen+1)%Align] = true
		rh, n, err := ReadHeader(bytes.NewReader(want))
		switch {
		case c.Fortran && !errors.Is(err, ErrFortranOrder):
			t.Errorf("ReadHeader(fortran %+v): %v", h, err)
		case !c.Fortran && (err != nil || !rh.equal(h) || n != int64(len(want))):
			t.Errorf("ReadHeader(%q) = %+v, %d, %v", want, rh, n, err)
		}
	}
	if len(cases) < 100 {
		t.Fatalf("only %d header cases", len(cases))
	}
	t.Logf("%d numpy headers, %d distinct unpadded lengths mod 64", len(cases), len(residues))
}

func TestNumpyHeaders(t *testing.T) { checkHeaders(t, filepath.Join(fixtureDir, "headers.json")) }

// TestNumpyConversion compares the float16 rounding with numpy's astype on
// boundary, halfway and random values (numpy converts float64 -> float16
// directly, with one rounding).
func TestNumpyConversion(t *testing.T) {
	read := func(name string) (Header, []byte) {
		h, data, err := ReadFile(filepath.Join(fixtureDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return h, data
	}
	h64, in64 := read("conv_in_f64.npy")
	_, out64 := read("conv_f64_to_f16.npy")
	x64 := make([]float64, h64.NumElems())
	DecodeFloat64s(x64, in64)
	w64 := make([]uint16, len(x64))
	DecodeUint16s(w64, out64)
	for i, x := range x64 {
		if got := F16FromF64(x); got != w64[i] {
			t.Errorf("F16FromF64(%v = %#x) = %#04x, numpy %#04x", x, x, got, w64[i])
		}
	}
	h32, in32 := read("conv_in_f32.npy")
	_, out32 := read("conv_f32_to_f16.npy")
	x32 := make([]float32, h32.NumElems())
	DecodeFloat32s(x32, in32)
	w32 := make([]uint16, len(x32))
	DecodeUint16s(w32, out32)
	got32 := make([]uint16, len(x32))
	F16sFromF32s(got32, x32)
	for i, x := range x32 {
		if got32[i] != w32[i] {
			t.Errorf("F16FromF32(%v) = %#04x, numpy %#04x", x, got32[i], w32[i])
		}
	}
	if len(x64) < 1000 || len(x32) < 1000 {
		t.Fatalf("too few conversion samples: %d, %d", len(x64), len(x32))
	}
}

// TestNumpyLive regenerates the fixtures with the installed numpy and checks
// against them, then has numpy load the files this package writes.
func TestNumpyLive(t *testing.T) {
	requireNumpy(t)
	dir := t.TempDir()
	runScript(t, "--out", dir)
	t.Run("fixtures", func(t *testing.T) { checkFixtures(t, dir) })
	t.Run("headers", func(t *testing.T) { checkHeaders(t, filepath.Join(dir, "headers.json")) })

	ours := t.TempDir()
	for _, c := range loadCases(t, dir) {
		if c.Kind != "save" {
			continue
		}
		h := Header{Descr: DType(c.Descr), Shape: c.Shape}
		// Stream in uneven chunks through NewWriter, as a generator would.
		f, err := os.Create(filepath.Join(ours, c.Name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWriter(f, h)
		if err != nil {
			t.Fatal(err)
		}
		data := fixtureData(h.Descr, h.NumElems(), c.Seed)
		for len(data) > 0 {
			n := min(len(data), 1000)
			if _, err := w.Write(data[:n]); err != nil {
				t.Fatal(err)
			}
			data = data[n:]
		}
		if err := errors.Join(w.Close(), f.Close()); err != nil {
			t.Fatal(err)
		}
	}
	runScript(t, "--check", ours)
}
