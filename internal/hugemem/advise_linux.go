package hugemem

import "golang.org/x/sys/unix"

func advise(b []byte) {
	unix.Madvise(b, unix.MADV_HUGEPAGE) // advice: an error changes nothing
}
