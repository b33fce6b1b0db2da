package manifests

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// setDirect turns O_DIRECT on or off for f.
func setDirect(f *os.File, on bool) error {
	fd := f.Fd()
	fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if on {
		fl |= unix.O_DIRECT
	} else {
		fl &^= unix.O_DIRECT
	}
	_, err = unix.FcntlInt(fd, unix.F_SETFL, fl)
	return err
}

func isEINVAL(err error) bool { return errors.Is(err, syscall.EINVAL) }
