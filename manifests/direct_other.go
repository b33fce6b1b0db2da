//go:build !linux

package manifests

import (
	"errors"
	"os"
)

// setDirect reports that direct I/O is not available: files are written
// buffered through the same staging code.
func setDirect(*os.File, bool) error { return errors.ErrUnsupported }

func isEINVAL(error) bool { return false }
