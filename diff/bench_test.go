package diff_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/goldset/goldset/diff"
)

// BenchmarkBundles64MiB diffs two 64 MiB float32 goldens. "sparse" changes
// one element per 4096 (most chunks still need the element loop), "dense"
// every element.
func BenchmarkBundles64MiB(b *testing.B) {
	const n = 16 << 20 // 64 MiB of float32
	oldData := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(oldData[4*i:], math.Float32bits(float32(i%1000)/7))
	}
	for _, bc := range []struct {
		name  string
		every int
	}{{"sparse", 4096}, {"dense", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			newData := make([]byte, len(oldData))
			copy(newData, oldData)
			for i := 0; i < n; i += bc.every {
				v := math.Float32frombits(binary.LittleEndian.Uint32(newData[4*i:]))
				binary.LittleEndian.PutUint32(newData[4*i:], math.Float32bits(v+0.25))
			}
			spec := func(data []byte) bundleSpec {
				return bundleSpec{suiteVersion: "1", cases: []caseSpec{{id: "big", op: "matmul", split: "public", params: `{}`,
					tensors: []tensorSpec{{name: "c", role: "golden", dtype: "float32", shape: []int64{4096, n / 4096}, data: data}}}}}
			}
			oldDir, newDir := mustBundle(b, spec(oldData)), mustBundle(b, spec(newData))
			ctx := context.Background()
			b.SetBytes(2 * 4 * n) // both files are read
			b.ReportAllocs()
			for b.Loop() {
				r, err := diff.Bundles(ctx, oldDir, newDir, diff.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if got := r.Cases[0].Tensors[0].Values.Changed; got != int64((n+bc.every-1)/bc.every) {
					b.Fatalf("changed %d", got)
				}
			}
		})
	}
}
