//go:build !purego

package npy

func hasF16CPath() bool { return hasF16C }
