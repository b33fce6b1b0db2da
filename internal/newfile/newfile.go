package newfile

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
)

// Digest is what Write wrote: the byte count and the lowercase hex sha256.
type Digest struct {
	Bytes  int64
	SHA256 string
}

// Write creates path (it must not exist), lets fill write it through a
// buffer of bufSize bytes, and returns the digest of what reached the
// file once it is synced and closed. On an error the file may be left
// partly written: the caller owns the directory and removes it.
func Write(path string, bufSize int, fill func(io.Writer) error) (Digest, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return Digest{}, err
	}
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(f, h)}
	bw := bufio.NewWriterSize(cw, bufSize)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Digest{}, err
	}
	return Digest{Bytes: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
