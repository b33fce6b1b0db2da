package manifests

import (
	"crypto/sha256"
	"io"
	"testing"
)

// BenchmarkFileWriterHashCopy measures FileWriter's per-byte CPU work (hash
// and copy) on 8 MiB writes, the size the suite's cache writers submit,
// with the device taken out (the copy goes to a reused buffer).
func BenchmarkFileWriterHashCopy(b *testing.B) {
	p := make([]byte, 8<<20)
	for i := range p {
		p[i] = byte(i * 7)
	}
	sink := &copySink{buf: make([]byte, len(p))}
	fw := &FileWriter{w: sink, h: sha256.New(), flushed: -1}
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		sink.off = 0
		if _, err := fw.Write(p); err != nil {
			b.Fatal(err)
		}
	}
}

// copySink copies what it is given into buf, like the direct writer's
// staging buffers.
type copySink struct {
	buf []byte
	off int
}

func (s *copySink) Write(p []byte) (int, error) {
	n := copy(s.buf[s.off:], p)
	s.off += n
	if n < len(p) {
		return n, io.ErrShortWrite
	}
	return n, nil
}
