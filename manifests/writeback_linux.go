package manifests

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to begin writing [off, off+n) of f to the
// device without waiting for it (sync_file_range SYNC_FILE_RANGE_WRITE), so
// the disk works while goldset computes and Commit's fsync only waits for
// the tail. Errors are ignored: the fsync in Commit is what guarantees
// durability and reports failures.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
