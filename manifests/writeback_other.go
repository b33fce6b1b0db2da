//go:build !linux

package manifests

import "os"

// startWriteback is a no-op where sync_file_range does not exist; Commit's
// fsync still makes the bundle durable.
func startWriteback(*os.File, int64, int64) {}
