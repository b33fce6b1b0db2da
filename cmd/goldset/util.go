package main

import (
	"os"
	"path/filepath"
)

// bundleDir returns the bundle directory for a path naming the directory or its manifest.json.
func bundleDir(p string) string {
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return filepath.Dir(p)
	}
	return p
}
