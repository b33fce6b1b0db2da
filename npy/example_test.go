package npy_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/goldset/goldset/npy"
)

func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "npy-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "x.npy")

	data := npy.AppendFloat32s(nil, []float32{1, 2, 3, 4, 5, 6})
	if err := npy.WriteFile(path, npy.Header{Descr: npy.Float32, Shape: []int64{2, 3}}, data); err != nil {
		log.Fatal(err)
	}
	h, raw, err := npy.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	vals := make([]float32, h.NumElems())
	npy.DecodeFloat32s(vals, raw)
	fmt.Println(h.Descr, h.Shape, vals)
	// Output: <f4 [2 3] [1 2 3 4 5 6]
}

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "npy-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "idx.npy")
	if err := npy.WriteFile(path, npy.Header{Descr: npy.Int32, Shape: []int64{4}}, npy.AppendInt32s(nil, []int32{7, -1, 0, 3})); err != nil {
		log.Fatal(err)
	}

	f, err := npy.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	raw, err := io.ReadAll(f) // exactly the data bytes
	if err != nil {
		log.Fatal(err)
	}
	idx := make([]int32, f.NumElems())
	npy.DecodeInt32s(idx, raw)
	fmt.Println(f.Descr, f.Shape, f.DataOffset, idx)

	// A file cut short is refused before its data is read.
	os.Truncate(path, 130)
	_, err = npy.Open(path)
	fmt.Println(errors.Is(err, npy.ErrTruncated))
	// Output:
	// <i4 [4] 128 [7 -1 0 3]
	// true
}

func ExampleNewWriter() {
	// Stream a [3, 2] float16 tensor in chunks from a reused buffer.
	out, err := os.CreateTemp("", "npy-example-*.npy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(out.Name())
	w, err := npy.NewWriter(out, npy.Header{Descr: npy.Float16, Shape: []int64{3, 2}})
	if err != nil {
		log.Fatal(err)
	}
	var buf []byte
	bits := make([]uint16, 2)
	for row := range 3 {
		npy.F16sFromF32s(bits, []float32{float32(row), float32(row) + 0.5})
		buf = npy.AppendUint16s(buf[:0], bits)
		if _, err := w.Write(buf); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil { // checks that all 12 data bytes came
		log.Fatal(err)
	}
	out.Close()

	h, raw, err := npy.ReadFile(out.Name())
	if err != nil {
		log.Fatal(err)
	}
	vals := make([]float64, h.NumElems())
	if err := npy.DecodeFloat64(vals, h.Descr, false, raw); err != nil {
		log.Fatal(err)
	}
	fmt.Println(h.Shape, vals)
	// Output: [3 2] [0 0.5 1 1.5 2 2.5]
}

func ExampleEncodeHeader() {
	b, err := npy.EncodeHeader(npy.Header{Descr: npy.Float32, Shape: []int64{3}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes: %q\n", len(b), b[:67])
	// Output: 128 bytes: "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
}

func ExampleReadHeader() {
	f, err := os.Open("testdata/fixtures/v3_i32_5.npy") // written by numpy, format 3.0
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	h, n, err := npy.ReadHeader(f)
	fmt.Println(h.Descr, h.Shape, n, err)
	// Output: <i4 [5] 128 <nil>
}

func ExampleF16FromF64() {
	fmt.Printf("%#04x %#04x %#04x\n",
		npy.F16FromF64(1+0x1p-11),       // halfway: ties to even, down to 1
		npy.F16FromF64(1+0x1p-11+1e-12), // just above halfway: up
		npy.F16FromF64(65520))           // overflow threshold: +Inf
	fmt.Println(npy.F16ToF64(0x0001)) // smallest subnormal, 2^-24
	// Output:
	// 0x3c00 0x3c01 0x7c00
	// 5.960464477539063e-08
}

func ExampleBF16sFromF32s() {
	src := []float32{1, 1.00390625, 3.14159265, -2.5}
	dst := make([]uint16, len(src))
	npy.BF16sFromF32s(dst, src)
	back := make([]float32, len(dst))
	npy.BF16sToF32s(back, dst)
	fmt.Printf("%#04x %v\n", dst, back)
	// Output: [0x3f80 0x3f80 0x4049 0xc020] [1 1 3.140625 -2.5]
}

func ExampleDecodeFloat64() {
	// bfloat16 data is stored as '<u2'; bf16 = true decodes it.
	raw := npy.AppendUint16s(nil, []uint16{0x3f80, 0xc0a0})
	vals := make([]float64, 2)
	if err := npy.DecodeFloat64(vals, npy.Uint16, true, raw); err != nil {
		log.Fatal(err)
	}
	fmt.Println(vals)
	// Output: [1 -5]
}

func ExampleParseDType() {
	for _, s := range []string{"<f4", "=f8", "<u1", ">f4"} {
		d, err := npy.ParseDType(s)
		fmt.Printf("%q %v\n", d, err)
	}
	// Output:
	// "<f4" <nil>
	// "<f8" <nil>
	// "|u1" <nil>
	// "" unsupported dtype ">f4": big-endian data is not supported (numpy: a.astype(a.dtype.newbyteorder('<')))
}
