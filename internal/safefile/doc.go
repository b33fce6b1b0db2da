// Package safefile opens the files goldset reads from bundles and from the
// command line without being redirected or blocked by what it finds there.
//
// Open accepts only a regular file. The path's last component is checked
// with Lstat before anything is opened, so a symbolic link, a named pipe
// (FIFO), a device, a socket or a directory is refused with an error naming
// the path and what it is (wrapping ErrNotRegular) — in particular a FIFO is
// never opened, which would block until a writer appears. The open itself
// uses O_NOFOLLOW and O_NONBLOCK where the platform has them, and the opened
// file must be the one Lstat saw (os.SameFile), so a swap between the check
// and the open is refused too.
//
// OpenIn opens a slash-separated relative path inside a root directory (a
// bundle): the path must be local (filepath.IsLocal; ErrOutside otherwise),
// every directory below the root must be a real directory and not a link,
// and the file must pass Open's checks. The root itself is the caller's
// choice and may be a link.
//
// CheckTree walks a directory without following links and reports the first
// entry that is neither a regular file nor a directory.
package safefile
