//go:build unix

package main

import "golang.org/x/sys/unix"

// freeBytes returns the bytes an unprivileged user may still write on the
// file system holding path, and false when that cannot be told.
func freeBytes(path string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
