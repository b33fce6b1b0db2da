package manifests

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goldset/goldset/internal/safefile"
)

// Issue 11, data loss: a directory holding a manifest.json that is not a
// goldset manifest of the suite (or holding anything the manifest does not
// list) is never replaced, with or without Overwrite, and stays intact.
func TestCreateBundleReplacesOnlyItsOwnBundle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		opts  CreateOptions
		want  error
		msg   string
	}{
		{"fake manifest", func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, "src"), 0o755)
			os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"manifest_version": 3}`), 0o644)
		}, CreateOptions{Suite: "s", Overwrite: true}, ErrNotBundle, "manifest.json"},
		{"other suite", func(t *testing.T, dir string) { writeBundle(t, dir, false) },
			CreateOptions{Suite: "other", Overwrite: true}, ErrNotBundle, `suite "s"`},
		{"extra file in bundle", func(t *testing.T, dir string) {
			writeBundle(t, dir, false)
			os.WriteFile(filepath.Join(dir, "c1", "thesis.txt"), []byte("thesis"), 0o644)
		}, CreateOptions{Suite: "s", Overwrite: true}, ErrNotBundle, "thesis.txt"},
		{"extra dir in bundle", func(t *testing.T, dir string) {
			writeBundle(t, dir, false)
			os.MkdirAll(filepath.Join(dir, "src"), 0o755)
		}, CreateOptions{Suite: "s", Overwrite: true}, ErrNotBundle, "src"},
		{"link in bundle", func(t *testing.T, dir string) {
			writeBundle(t, dir, false)
			p := filepath.Join(dir, "c1", "x.npy")
			os.Remove(p)
			os.Symlink("/etc/passwd", p)
		}, CreateOptions{Suite: "s", Overwrite: true}, ErrNotBundle, "symbolic link"},
		{"own bundle without overwrite", func(t *testing.T, dir string) { writeBundle(t, dir, false) },
			CreateOptions{Suite: "s"}, ErrExists, "--overwrite"},
		{"a file", func(t *testing.T, dir string) { os.WriteFile(dir, []byte("x.npy"), 0o644) },
			CreateOptions{Suite: "s", Overwrite: true}, ErrNotBundle, "a regular file"},
		{"a link to a bundle", func(t *testing.T, dir string) {
			writeBundle(t, dir+"-real", false)
			os.Symlink(dir+"-real", dir)
		}, CreateOptions{Suite: "s", Overwrite: true}, ErrNotBundle, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			tc.setup(t, dir)
			before := snapshot(t, dir)
			_, err := CreateBundleWith(dir, tc.opts)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("target changed:\n%s\n->\n%s", before, after)
			}
		})
	}
}

func TestCreateBundleAnnouncesReplacement(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	m := writeBundle(t, dir, false)
	bw, err := CreateBundleWith(dir, CreateOptions{Suite: "s", Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	if bw.Replaces == nil || bw.Replaces.Digest != m.Digest {
		t.Errorf("Replaces = %+v, want the old bundle's manifest", bw.Replaces)
	}
}

// snapshot lists every path under dir with its kind and size.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			b.WriteString(p + " " + fi.Mode().String() + " " + string(rune('0'+fi.Size()%10)) + "\n")
		}
		return nil
	})
	return b.String()
}

// Issue 11, hangs and links: tensors that are FIFOs, links (to files or
// through linked case directories) or devices are refused naming them, and
// a FIFO is refused without blocking.
func TestOpenTensorRefusesIrregularFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		msg   string
	}{
		{"fifo", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "c1", "x.npy")
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip(err)
			}
		}, "named pipe"},
		{"file link", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "c1", "x.npy")
			os.Remove(p)
			os.Symlink("/etc/passwd", p)
		}, "symbolic link"},
		{"case dir link", func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "c1"), dir+"-c1")
			os.Symlink(dir+"-c1", filepath.Join(dir, "c1"))
		}, "symbolic link"},
		{"device", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "c1", "x.npy")
			os.Remove(p)
			os.Symlink("/dev/zero", p)
		}, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			m := writeBundle(t, dir, false)
			tc.setup(t, dir)
			done := make(chan []Problem, 1)
			go func() { done <- Verify(dir, m, 2) }()
			probs := <-done
			if len(probs) == 0 || !strings.Contains(probs[0].What, tc.msg) || probs[0].Tensor != "x" {
				t.Fatalf("problems %v, want x refused as %s", probs, tc.msg)
			}
			if _, _, err := LoadTensor(dir, &m.Cases[0].Tensors[0]); !errors.Is(err, safefile.ErrNotRegular) {
				t.Errorf("LoadTensor: %v, want ErrNotRegular", err)
			}
		})
	}
}

// Issue 11, wrong verdicts: a golden changed on disk (zeroed) is refused by
// LoadTensor, the reader every judgement uses.
func TestLoadTensorChecksSHA256(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	m := writeBundle(t, dir, false)
	tn := &m.Cases[0].Tensors[0]
	p := filepath.Join(dir, tn.Path)
	data, _ := os.ReadFile(p)
	for i := len(data) - 16; i < len(data); i++ {
		data[i] = 0
	}
	os.WriteFile(p, data, 0o644)
	if _, _, err := LoadTensor(dir, tn); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("LoadTensor of a zeroed golden: %v, want ErrMismatch naming sha256", err)
	}
}

// FuzzManifestTensorPath: whatever tensor path a manifest carries, a
// manifest that parses never makes OpenTensor read outside the bundle or
// through a link.
func FuzzManifestTensorPath(f *testing.F) {
	for _, s := range []string{"c1/x.npy", "../x.npy", "/etc/passwd", "c1/../../x", `c1\x`, "c1/link/x.npy", "c1//x.npy"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		root := filepath.Join(t.TempDir(), "b")
		m := writeBundle(t, root, false)
		outside := filepath.Join(filepath.Dir(root), "secret.npy")
		os.WriteFile(outside, []byte("\x93NUMPY"), 0o644)
		os.Symlink(filepath.Dir(root), filepath.Join(root, "c1", "link"))
		m.Cases[0].Tensors[0].Path = rel
		m.Digest = ""
		data, err := m.Marshal()
		if err != nil {
			return
		}
		pm, err := ParseManifest("fuzz.json", data)
		if err != nil {
			return
		}
		rc, err := OpenTensor(root, &pm.Cases[0].Tensors[0])
		if err != nil {
			return
		}
		f, ok := rc.(*os.File)
		if !ok {
			rc.Close()
			return
		}
		defer f.Close()
		got, _ := f.Stat()
		want, err := os.Stat(outside)
		if err == nil && os.SameFile(got, want) {
			t.Fatalf("tensor path %q read a file outside the bundle", rel)
		}
		p, _ := filepath.EvalSymlinks(f.Name())
		r, err := filepath.Rel(root, p)
		if err != nil || !filepath.IsLocal(r) {
			t.Fatalf("tensor path %q opened %s, outside %s", rel, p, root)
		}
	})
}
