//go:build !amd64 || purego

package npy

func hasF16CPath() bool { return false }
