package diff

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// manifestDir returns the directory of p when p names a file (a
// manifest.json), as manifests.ReadManifest accepts both forms.
func manifestDir(p string) (string, bool) {
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() {
		return "", false
	}
	return filepath.Dir(p), true
}

type chunkBuffers struct{ old, new []byte }

func (b *chunkBuffers) get(n int) ([]byte, []byte) {
	if cap(b.old) < n {
		b.old = make([]byte, n)
		b.new = make([]byte, n)
	}
	return b.old[:n], b.new[:n]
}

// tensorStream is an open tensor positioned at its first data byte.
type tensorStream struct {
	rc   io.ReadCloser
	r    *bufio.Reader
	path string
}

func openStream(root string, t *manifests.Tensor) (*tensorStream, npy.Header, error) {
	p := filepath.Join(root, filepath.FromSlash(t.Path))
	rc, err := manifests.OpenTensor(root, t) // its errors name the file
	if err != nil {
		return nil, npy.Header{}, err
	}
	s := &tensorStream{rc: rc, r: bufio.NewReaderSize(rc, 64<<10), path: p}
	h, hn, err := npy.ReadHeader(namedReader{s.r, p}) // npy names the file from Name
	if err != nil {
		rc.Close()
		return nil, h, err
	}
	if err := manifests.CheckHeader(h, t); err != nil {
		rc.Close()
		return nil, h, fmt.Errorf("%q: %w: %v", p, manifests.ErrMismatch, err)
	}
	if data := h.NumBytes(); data < 0 || data != t.Bytes-hn {
		rc.Close()
		return nil, h, fmt.Errorf("%q: %w: %d-byte header and %d data bytes, manifest says %d bytes in all",
			p, manifests.ErrMismatch, hn, data, t.Bytes)
	}
	return s, h, nil
}

// namedReader gives npy.ReadHeader the file name for its errors.
type namedReader struct {
	io.Reader
	name string
}

func (n namedReader) Name() string { return n.name }

func (s *tensorStream) read(dst []byte) error {
	if _, err := io.ReadFull(s.r, dst); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("%q: %w: %w: data ends early", s.path, manifests.ErrMismatch, npy.ErrTruncated)
		}
		return fmt.Errorf("read %q: %w", s.path, err)
	}
	return nil
}

// compareValues streams both tensors chunk by chunk; the caller checked that
// their dtypes and shapes agree.
func compareValues(ctx context.Context, oldRoot, newRoot string, ot, nt *manifests.Tensor, opts Options, bufs *chunkBuffers) (*Values, error) {
	olds, oh, err := openStream(oldRoot, ot)
	if err != nil {
		return nil, fmt.Errorf("old bundle: %w", err)
	}
	defer olds.rc.Close()
	news, _, err := openStream(newRoot, nt)
	if err != nil {
		return nil, fmt.Errorf("new bundle: %w", err)
	}
	defer news.rc.Close()

	dt, err := dtype.Parse(nt.DType)
	if err != nil {
		return nil, fmt.Errorf("new bundle: tensor %s: %w", nt.Name, err)
	}
	k := kindOf(dt)
	size := oh.Descr.ItemSize()
	total := oh.NumElems()
	acc := accumulator{dt: dt, floor: opts.RelFloor, first: -1, worst: -1, relAt: -1, firstNonFinite: -1}
	chunk := int64(opts.ChunkElems)
	for base := int64(0); base < total; base += chunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := int(min(chunk, total-base))
		ob, nb := bufs.get(n * size)
		if err := olds.read(ob); err != nil {
			return nil, fmt.Errorf("old bundle: %w", err)
		}
		if err := news.read(nb); err != nil {
			return nil, fmt.Errorf("new bundle: %w", err)
		}
		if bytes.Equal(ob, nb) {
			continue
		}
		acc.chunk(k, base, ob, nb)
	}
	return acc.values(total, oh.Shape, k.integer()), nil
}

// kind says how to decode one element.
type kind int

const (
	kindF16 kind = iota
	kindBF16
	kindF32
	kindF64
	kindByteFloat
	kindI32 // integers from here on
	kindI64
	kindU8
)

func (k kind) integer() bool { return k >= kindI32 }

// kindOf picks the decoder of one stored element of a dtype table row
// (openStream checked the header against it). The byte floats (float8,
// packed float4 pairs, float8_e8m0) decode through the table per byte.
func kindOf(d dtype.DType) kind {
	switch d {
	case dtype.Float16:
		return kindF16
	case dtype.BFloat16:
		return kindBF16
	case dtype.Float32:
		return kindF32
	case dtype.Float64:
		return kindF64
	case dtype.Int32:
		return kindI32
	case dtype.Int64:
		return kindI64
	case dtype.Uint8:
		return kindU8
	}
	return kindByteFloat
}

// accumulator gathers the statistics of one tensor in element order, so
// ties keep the first index.
type accumulator struct {
	dt             dtype.DType // the tensor's dtype (kindByteFloat decodes through it)
	floor          float64
	changed        int64
	nanMismatch    int64
	infMismatch    int64
	maxAbs, maxRel float64
	first, worst   int64
	relAt          int64
	firstNonFinite int64
}

// byteMask is the code bits of one byte-float element.
func (a *accumulator) byteMask() byte {
	if a.dt == dtype.Float4E2M1x2 {
		return 0xf
	}
	return 0xff
}

func (a *accumulator) chunk(k kind, base int64, ob, nb []byte) {
	le := binary.LittleEndian
	switch k {
	case kindF16, kindBF16:
		for i := 0; i < len(ob)/2; i++ {
			x, y := le.Uint16(ob[2*i:]), le.Uint16(nb[2*i:])
			if x == y {
				continue
			}
			idx := base + int64(i)
			if k == kindF16 {
				a.float(idx, npy.F16ToF64(x), npy.F16ToF64(y))
			} else {
				a.float(idx, float64(npy.BF16ToF32(x)), float64(npy.BF16ToF32(y)))
			}
		}
	case kindF32, kindI32:
		for i := 0; i < len(ob)/4; i++ {
			x, y := le.Uint32(ob[4*i:]), le.Uint32(nb[4*i:])
			if x == y {
				continue
			}
			if k == kindF32 {
				a.float(base+int64(i), float64(math.Float32frombits(x)), float64(math.Float32frombits(y)))
			} else {
				a.integer(base+int64(i), int64(int32(x)), int64(int32(y)))
			}
		}
	case kindF64, kindI64:
		for i := 0; i < len(ob)/8; i++ {
			x, y := le.Uint64(ob[8*i:]), le.Uint64(nb[8*i:])
			if x == y {
				continue
			}
			if k == kindF64 {
				a.float(base+int64(i), math.Float64frombits(x), math.Float64frombits(y))
			} else {
				a.integer(base+int64(i), int64(x), int64(y))
			}
		}
	case kindU8:
		for i := range ob {
			if ob[i] != nb[i] {
				a.integer(base+int64(i), int64(ob[i]), int64(nb[i]))
			}
		}
	case kindByteFloat:
		// One stored byte is one element (a float4 pair: the first
		// nibble that differs stands for the byte).
		for i := range ob {
			x, y := ob[i], nb[i]
			if x == y {
				continue
			}
			if a.dt == dtype.Float4E2M1x2 && x&0xf == y&0xf {
				x, y = x>>4, y>>4
			}
			a.float(base+int64(i), a.dt.Widen(uint64(x&a.byteMask())), a.dt.Widen(uint64(y&a.byteMask())))
		}
	}
}

// float records one element whose bits differ.
func (a *accumulator) float(idx int64, x, y float64) {
	a.mark(idx)
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn && yn:
		// Only the NaN payload or sign changed.
		return
	case xn || yn:
		a.nanMismatch++
		a.nonFinite(idx)
		return
	case math.IsInf(x, 0) || math.IsInf(y, 0):
		a.infMismatch++
		a.nonFinite(idx)
		return
	}
	a.record(idx, math.Abs(y-x), math.Abs(x))
}

// integer records one element whose value differs; the absolute change is
// exact up to 2**53.
func (a *accumulator) integer(idx int64, x, y int64) {
	a.mark(idx)
	var d uint64
	if y > x {
		d = uint64(y) - uint64(x)
	} else {
		d = uint64(x) - uint64(y)
	}
	mag := float64(x)
	a.record(idx, float64(d), math.Abs(mag))
}

func (a *accumulator) mark(idx int64) {
	if a.changed == 0 {
		a.first = idx
	}
	a.changed++
}

func (a *accumulator) nonFinite(idx int64) {
	if a.firstNonFinite < 0 {
		a.firstNonFinite = idx
	}
}

func (a *accumulator) record(idx int64, abs, mag float64) {
	if a.worst < 0 || abs > a.maxAbs {
		a.maxAbs, a.worst = abs, idx
	}
	rel := abs / max(mag, a.floor)
	if a.relAt < 0 || rel > a.maxRel {
		a.maxRel, a.relAt = rel, idx
	}
}

func (a *accumulator) values(total int64, shape []int64, integer bool) *Values {
	v := &Values{
		Elements:       total,
		Changed:        a.changed,
		MaxAbs:         Number(a.maxAbs),
		MaxRel:         Number(a.maxRel),
		NaNMismatch:    a.nanMismatch,
		InfMismatch:    a.infMismatch,
		Integer:        integer,
		First:          unravel(a.first, shape),
		Worst:          unravel(a.worst, shape),
		MaxRelAt:       unravel(a.relAt, shape),
		FirstNonFinite: unravel(a.firstNonFinite, shape),
	}
	if total > 0 {
		v.Share = float64(a.changed) / float64(total)
	}
	return v
}

// unravel turns a row-major flat index into a multi-dimensional one; a
// negative index (none) gives nil.
func unravel(flat int64, shape []int64) []int64 {
	if flat < 0 {
		return nil
	}
	idx := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = flat % shape[d]
			flat /= shape[d]
		}
	}
	return idx
}
