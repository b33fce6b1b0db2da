//go:build !amd64

package npy

func hasF16CPath() bool { return false }
