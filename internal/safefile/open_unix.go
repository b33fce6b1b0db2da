//go:build unix

package safefile

import "syscall"

// noFollow refuses a link in the last component and never waits for a
// FIFO's writer (the Lstat check refuses FIFOs first; this closes the race).
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
