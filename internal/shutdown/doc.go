// Package shutdown lets a process end promptly on a signal without cutting
// short the few steps that must not be cut: the command-line tool cancels
// its context on the first SIGINT/SIGTERM and, when the command has not
// returned a second later (it is blocked in an open or read that cannot be
// cancelled, such as an open of a FIFO nobody writes to), calls Exit.
//
// Exit waits for any Critical section in progress (a bundle's final fsync
// and rename, which decide which bundle the target holds), then runs the
// cleanups registered with OnExit (removing temporary directories) and
// exits. Work that is cut this way is cut as a crash would cut it: a
// bundle becomes visible only by the rename of a complete temporary
// directory, so a forced exit leaves the old bundle or the new complete
// one at the target, never a partial one; a temporary directory a cleanup
// could not remove (files still being written into it) is removed by the
// next run (manifests' stale-temporary cleaning).
//
// Critical sections are not nested and are short; a process blocked inside
// one (a hung file system) still ends on the second signal, which exits at
// once without this package.
package shutdown
