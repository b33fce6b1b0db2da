package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func f32s(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// The byte vectors are the reference's own tests (huggingface/safetensors
// safetensors/src/tensor.rs at 000a16f45cff: test_serialization,
// test_serialization_forced_alignement, test_empty), typed in from there.
func TestEncodeMatchesReference(t *testing.T) {
	data := f32s(0, 1, 2, 3, 4, 5)
	cases := []struct {
		name string
		meta map[string]string
		ts   []Tensor
		want []byte
	}{
		{"serialization", nil, []Tensor{{Name: "attn.0", DType: "F32", Shape: []int64{1, 2, 3}, Data: data}}, append([]byte{
			64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
			116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
			58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
			101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125}, data...)},
		{"forced alignment", nil, []Tensor{{Name: "attn0", DType: "F32", Shape: []int64{1, 1, 2, 3}, Data: data}}, append([]byte{
			72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
			121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
			91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
			115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
			32, 32}, data...)},
		{"empty", nil, nil, []byte{8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32}},
		{"empty with metadata", map[string]string{"framework": "pt"}, nil, []byte{
			40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
			95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
			116, 34, 125, 125, 32, 32, 32, 32, 32}},
	}
	for _, c := range cases {
		var b bytes.Buffer
		if err := Encode(&b, c.meta, c.ts); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(b.Bytes(), c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, b.Bytes(), c.want)
		}
		if _, err := ReadHeader(bytes.NewReader(b.Bytes()), int64(b.Len())); err != nil {
			t.Errorf("%s: read back: %v", c.name, err)
		}
	}
}

func TestOrderAndRoundTrip(t *testing.T) {
	ts := []Tensor{
		{Name: "b", DType: "BF16", Shape: []int64{3}, Data: make([]byte, 6)},
		{Name: "a", DType: "U8", Shape: []int64{5}, Data: []byte{1, 2, 3, 4, 5}},
		{Name: "z", DType: "I64", Shape: []int64{1}, Data: make([]byte, 8)},
		{Name: "c", DType: "BF16", Shape: []int64{0, 4}, Data: []byte{}},
	}
	var b bytes.Buffer
	if err := Encode(&b, map[string]string{"k": "v"}, ts); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHeader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range h.Tensors {
		got = append(got, x.Name)
	}
	// Descending dtype rank (I64 > BF16 > U8), then name.
	if want := "z b c a"; join(got) != want || h.Metadata["k"] != "v" || h.DataStart%8 != 0 {
		t.Fatalf("order %q (want %q), metadata %v, data at %d", join(got), want, h.Metadata, h.DataStart)
	}
	if a, _ := h.Tensor("a"); !bytes.Equal(b.Bytes()[h.DataStart+a.Begin:h.DataStart+a.End], []byte{1, 2, 3, 4, 5}) {
		t.Fatal("tensor a's data moved")
	}
}

func join(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	return b.String()
}

func TestReadHeaderRejects(t *testing.T) {
	good := func() []byte {
		var b bytes.Buffer
		Encode(&b, nil, []Tensor{{Name: "x", DType: "F32", Shape: []int64{2}, Data: f32s(1, 2)}})
		return b.Bytes()
	}
	hdr := func(json string, data int) []byte {
		for len(json)%8 != 0 {
			json += " "
		}
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(json)))
		return append(append(b, json...), make([]byte, data)...)
	}
	cases := map[string][]byte{
		"short":           {1, 2, 3},
		"huge length":     binary.LittleEndian.AppendUint64(nil, MaxHeader+1),
		"length past end": append(binary.LittleEndian.AppendUint64(nil, 64), '{', '}'),
		"truncated data":  good()[:len(good())-1],
		"trailing data":   append(good(), 0),
		"not an object":   hdr(`[1]`, 0),
		"unknown dtype":   hdr(`{"x":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}`, 16),
		"gap":             hdr(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2),
		"wrong size":      hdr(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4),
		"negative dim":    hdr(`{"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, 0),
		"overflow":        hdr(`{"x":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`, 0),
		"duplicate":       hdr(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2),
		"bad metadata":    hdr(`{"__metadata__":{"a":1}}`, 0),
		"two objects":     hdr(`{}{}`, 0),
		"not utf8":        hdr("{\"\xff\":{}}", 0),
	}
	for name, b := range cases {
		if _, err := ReadHeader(bytes.NewReader(b), int64(len(b))); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err %v, want ErrFormat", name, err)
		}
	}
}

func FuzzReadHeader(f *testing.F) {
	var b bytes.Buffer
	Encode(&b, map[string]string{"a": "b"}, []Tensor{{Name: "x", DType: "BF16", Shape: []int64{2, 1}, Data: []byte{1, 2, 3, 4}}, {Name: "y", DType: "U8", Shape: []int64{1}, Data: []byte{9}}})
	f.Add(b.Bytes())
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		// A valid header's tensors tile the data exactly: re-encoding them
		// gives a valid file with the same tensors.
		var ts []Tensor
		for _, x := range h.Tensors {
			ts = append(ts, Tensor{Name: x.Name, DType: x.DType, Shape: x.Shape, Data: data[h.DataStart+x.Begin : h.DataStart+x.End]})
		}
		var out bytes.Buffer
		if err := Encode(&out, h.Metadata, ts); err != nil {
			if len(out.Bytes()) == 0 {
				return // a name the writer refuses ("" or __metadata__-like)
			}
			t.Fatal(err)
		}
		h2, err := ReadHeader(bytes.NewReader(out.Bytes()), int64(out.Len()))
		if err != nil || len(h2.Tensors) != len(h.Tensors) {
			t.Fatalf("re-encoded file: %v (%d tensors, had %d)", err, len(h2.Tensors), len(h.Tensors))
		}
	})
}
