package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goldset/goldset/manifests"
	"github.com/spf13/pflag"
)

// tensorTotals counts a manifest's tensor entries and the bytes of its
// files. A pipeline chain lists an earlier stage's golden cache again as a
// later stage's input (the same file), so bytes count each path once: the
// bundle's size on disk, not twice its caches.
func tensorTotals(m *manifests.Manifest) (n int, bytes int64) {
	seen := map[string]bool{}
	for _, c := range m.Cases {
		for _, t := range c.Tensors {
			n++
			if !seen[t.Path] {
				seen[t.Path] = true
				bytes += t.Bytes
			}
		}
	}
	return n, bytes
}

// bundleDir returns the bundle directory for a path naming the directory or
// its manifest.json. Anything else (a FIFO, a link to a file) is returned
// as is, so that reading it fails naming it rather than its parent.
func bundleDir(p string) string {
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		return filepath.Dir(p)
	}
	return p
}

// positiveInt is an int flag that refuses values below 1 when it is parsed,
// so --jobs 0, --n 0 or --max-len 0 are usage errors (exit 2) typed by
// pflag's flag-error path, not found by matching messages.
type positiveInt struct{ p *int }

func (v positiveInt) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v positiveInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	if n < 1 {
		return fmt.Errorf("%d: must be at least 1", n)
	}
	*v.p = n
	return nil
}

func (positiveInt) Type() string { return "int" }

// posIntVarP defines a positiveInt flag with a default.
func posIntVarP(f *pflag.FlagSet, p *int, name, short string, def int, usage string) {
	*p = def
	f.VarP(positiveInt{p}, name, short, usage)
}

// enumSlice is a comma-separated, repeatable flag whose values must come
// from a fixed set.
type enumSlice struct {
	p       *[]string
	allowed []string
	set     bool
}

func (v *enumSlice) String() string { return strings.Join(*v.p, ",") }

func (v *enumSlice) Set(s string) error {
	if !v.set {
		*v.p = nil
		v.set = true
	}
	for _, x := range strings.Split(s, ",") {
		if !slices.Contains(v.allowed, x) {
			return fmt.Errorf("unknown value %q (one of: %s)", x, strings.Join(v.allowed, ", "))
		}
		*v.p = append(*v.p, x)
	}
	return nil
}

func (v *enumSlice) Type() string { return "strings" }

// writeJSON prints v as indented JSON through encoding/json: every command's
// --json output goes through here (snake_case keys, valid UTF-8).
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
