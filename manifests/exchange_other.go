//go:build !linux

package manifests

import "errors"

// exchange is not available: Commit falls back to two renames.
func exchange(a, b string) error { return errors.New("atomic exchange not supported") }
