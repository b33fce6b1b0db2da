package compare

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/npy"
	"github.com/goldset/goldset/safetensors"
)

// TestReadCandidateFileForms reads the same values as .safetensors (tensor
// chosen by name) and raw .bin (shape and dtype from the golden), and
// checks each form's refusals.
func TestReadCandidateFileForms(t *testing.T) {
	dir := t.TempDir()
	shape := []int64{2, 3}
	bf := npy.AppendUint16s(nil, []uint16{0x3f80, 0, 0xbf80, 0x4000, 0x7f80, 0x3f00}) // 1 0 -1 2 +Inf 0.5
	want := []float64{1, 0, -1, 2, math.Inf(1), 0.5}
	st := func(name string, ts ...safetensors.Tensor) string {
		var b bytes.Buffer
		if err := safetensors.Encode(&b, map[string]string{"k": "v"}, ts); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, b.Bytes(), 0o644)
		return p
	}
	raw := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	f32 := npy.AppendFloat32s(nil, []float32{1, 0, -1, 2, float32(math.Inf(1)), 0.5})
	good := st("out.safetensors", safetensors.Tensor{Name: "y", DType: "BF16", Shape: shape, Data: bf},
		safetensors.Tensor{Name: "z", DType: "F32", Shape: shape, Data: f32},
		safetensors.Tensor{Name: "i", DType: "I64", Shape: shape, Data: npy.AppendInt64s(nil, []int64{0, 1, 2, 3, 4, 5})})
	for _, tc := range []struct {
		name, path, key, golden string
		want                    []float64
		err                     error
		msg                     string
	}{
		{"bf16 tensor", good, "y", "bfloat16", want, nil, ""},
		{"f32 tensor for bf16", good, "z", "bfloat16", want, nil, ""},
		{"i64 tensor for int32", good, "i", "int32", []float64{0, 1, 2, 3, 4, 5}, nil, ""},
		{"bf16 tensor for float16", good, "y", "float16", nil, ErrCandidate, "safetensors dtype BF16 for a float16 output"},
		{"missing tensor", good, "out", "bfloat16", nil, ErrCandidate, `no tensor "out" (tensors: i, z, y)`},
		{"wrong shape", st("s.safetensors", safetensors.Tensor{Name: "y", DType: "BF16", Shape: []int64{3, 2}, Data: bf}), "y", "bfloat16", nil, ErrCandidate, "shape [3 2]"},
		{"not safetensors", raw("bad.safetensors", []byte("hello, world")), "y", "bfloat16", nil, safetensors.ErrFormat, ""},
		{"raw bf16", raw("y.bin", bf), "", "bfloat16", want, nil, ""},
		{"raw f32", raw("z.bin", f32), "", "float32", want, nil, ""},
		{"raw of the wrong size", raw("short.bin", bf[:10]), "", "bfloat16", nil, ErrCandidate, "10 bytes, a raw bfloat16 [2 3] is 12 bytes"},
		{"raw f32 for bf16 golden", raw("f32.bin", f32), "", "bfloat16", nil, ErrCandidate, "24 bytes"},
	} {
		got, err := ReadCandidateTensor(context.Background(), tc.path, tc.key, tc.golden, shape, nil)
		if !errors.Is(err, tc.err) || tc.err == nil && len(got) != len(tc.want) {
			t.Errorf("%s: %v %v", tc.name, got, err)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.path)) {
			t.Errorf("%s: error %q does not name the file and say %q", tc.name, err, tc.msg)
		}
		for i := range tc.want {
			if got[i] != tc.want[i] {
				t.Errorf("%s: [%d] = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	// Byte formats: a float4 golden from U8 bytes (two codes each).
	codes := raw("codes.bin", []byte{0x21, 0x8f})
	got, err := ReadCandidateTensor(context.Background(), codes, "", "float4_e2m1fn_x2", []int64{1, 2}, nil)
	if err != nil || len(got) != 4 || got[0] != 0.5 || got[1] != 1 || got[2] != -6 || !math.Signbit(got[3]) {
		t.Errorf("float4 .bin: %v %v", got, err)
	}
}

func FuzzReadCandidateTensor(f *testing.F) {
	var b bytes.Buffer
	safetensors.Encode(&b, nil, []safetensors.Tensor{{Name: "y", DType: "BF16", Shape: []int64{2}, Data: []byte{0x80, 0x3f, 0, 0}}})
	f.Add(b.Bytes(), true, uint8(0))
	f.Add([]byte{0x80, 0x3f, 0, 0}, false, uint8(0))
	f.Add([]byte{1, 2}, false, uint8(2))
	goldens := []string{"bfloat16", "float32", "int32", "float4_e2m1fn_x2", "float8_e4m3fn"}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, isST bool, g uint8) {
		golden := goldens[int(g)%len(goldens)]
		p := filepath.Join(dir, "c.bin")
		if isST {
			p = filepath.Join(dir, "c.safetensors")
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadCandidateTensor(context.Background(), p, "y", golden, []int64{2}, nil)
		if err == nil && len(got) != 2*map[bool]int{true: 2, false: 1}[golden == "float4_e2m1fn_x2"] {
			t.Fatalf("%d values for shape [2] of %s", len(got), golden)
		}
	})
}
