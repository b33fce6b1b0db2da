package longbench

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 11, data loss: checkOut lets only a longbench build be replaced,
// and only with overwrite; files, links and foreign directories never.
func TestCheckOutReplacesOnlyBuilds(t *testing.T) {
	dir := t.TempDir()
	build := func(name string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, ManifestFile), []byte(`{"format":"`+ManifestFormat+`","outputs":[{"path":"serve.jsonl"}]}`), 0o644)
		os.WriteFile(filepath.Join(p, "serve.jsonl"), []byte("{}\n"), 0o644)
		return p
	}
	own := build("own")
	foreign := filepath.Join(dir, "precious")
	os.MkdirAll(filepath.Join(foreign, "sub"), 0o755)
	os.WriteFile(filepath.Join(foreign, "thesis.txt"), []byte("x"), 0o644)
	file := filepath.Join(dir, "a.npy")
	os.WriteFile(file, []byte("x"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(own, link)
	extra := build("extra")
	os.WriteFile(filepath.Join(extra, "notes.md"), []byte("x"), 0o644)
	fakeKernels := build("fakekernels")
	os.MkdirAll(filepath.Join(fakeKernels, "kernels", "stage3-longbench", "src"), 0o755)
	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, ManifestFile), []byte(`{"format":"something else"}`), 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, tc := range []struct {
		out       string
		overwrite bool
		replacing bool
		err       error
		msg       string
	}{
		{filepath.Join(dir, "new"), false, false, nil, ""},
		{empty, false, false, nil, ""},
		{own, false, false, ErrOutputExists, "--overwrite"},
		{own, true, true, nil, ""},
		{foreign, true, false, ErrNotOurs, "manifest.json"},
		{file, true, false, ErrNotOurs, "regular file"},
		{link, true, false, ErrNotOurs, "symbolic link"},
		{extra, true, false, ErrNotOurs, "notes.md"},
		{fakeKernels, true, false, ErrNotOurs, "stage3-longbench"},
		{other, true, false, ErrNotOurs, ManifestFormat},
	} {
		replacing, err := checkOut(tc.out, tc.overwrite)
		if replacing != tc.replacing || !errors.Is(err, tc.err) || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("checkOut(%s, %v) = %v, %v; want %v, %v mentioning %q", tc.out, tc.overwrite, replacing, err, tc.replacing, tc.err, tc.msg)
		}
	}
	// commitDir refuses too, leaving the foreign directory as it was.
	if err := commitDir(foreign, true, func(string) error { return nil }); !errors.Is(err, ErrNotOurs) {
		t.Errorf("commitDir over a foreign directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(foreign, "thesis.txt")); err != nil {
		t.Errorf("foreign file gone: %v", err)
	}
}
