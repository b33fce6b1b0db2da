// Package newfile writes a file that must not exist yet (O_EXCL): through
// a buffer, hashed with sha256 and counted as it is written, synced and
// closed before the digest is returned. Exports and longbench builds write
// every file of a temporary directory this way, so that the index or
// manifest they write last records exactly the bytes on disk.
package newfile
