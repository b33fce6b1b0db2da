//go:build unix

package manifests

import (
	"errors"
	"os"
	"syscall"
)

// processAlive reports whether pid may still be writing its temporary.
func processAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
