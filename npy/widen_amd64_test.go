package npy

func hasF16CPath() bool { return hasF16C }
