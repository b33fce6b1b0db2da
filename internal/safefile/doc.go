// Package safefile opens the files goldset reads from bundles and from the
// command line without being redirected or blocked by what it finds there.
// Every input file a user names (a RESULT, --recipe, --tokenizer,
// --v2-template, --model FILE, --secret-file, a bundle's manifest, a
// candidate) and every file read from a bundle or a data directory goes
// through Open or ReadFile.
//
// Open accepts only a regular file. The path's last component is checked
// with Lstat before anything is opened, so a symbolic link, a named pipe
// (FIFO), a device, a socket or a directory is refused with an error naming
// the path and what it is (wrapping ErrNotRegular) — in particular a FIFO is
// never opened, which would block until a writer appears. The open itself
// uses O_NOFOLLOW and O_NONBLOCK where the platform has them (O_NONBLOCK
// makes the open of a FIFO return at once; on a regular file it changes
// nothing), and the opened file must be the one Lstat saw (Fstat and
// os.SameFile), so a swap between the check and the open is refused too.
// Lstat-then-open with the flags is chosen over opening first and asking
// Fstat alone: an open of a device can itself have effects (a tape rewinds,
// a terminal becomes the controlling one), and Lstat names the refusal
// before any of that.
//
// Links are refused, not followed, for user-named files too: a link in a
// bundle could redirect a verdict to any file (issue 11), and one rule for
// every input is easier to trust than one per command. The error says where
// the link leads and how to proceed ("name TARGET itself, or replace the
// link with a copy"); it resolves the link with Lstat and Readlink only. A
// Hugging Face cache's snapshots/<rev>/tokenizer.json is such a link (to
// blobs/<sha256>): pass the blob path the message names. A link to a FIFO
// or a directory is named as such. Directories given as roots (a bundle,
// --data, --templates, --workload) may be links; the files read inside
// them may not.
//
// ReadFile reads a whole regular file up to a limit that its format makes
// natural (a recipe, a template, a tokenizer.json, a benchmark result): the
// size is taken from the opened file before anything is allocated or read,
// and a larger file is refused naming it, its size and the limit
// (ErrTooLarge). Callers own the limits (they know the format).
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
