//go:build !unix

package safefile

// noFollow is empty where the flags do not exist; Lstat and SameFile still
// check the file.
const noFollow = 0
