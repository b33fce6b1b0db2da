package export

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

func BenchmarkExport(b *testing.B) {
	bundle := testBundle(b)
	for _, f := range Formats {
		b.Run(string(f), func(b *testing.B) {
			dir := b.TempDir()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				res, err := Export(context.Background(), Options{Bundle: bundle, Out: filepath.Join(dir, fmt.Sprint(i)), Format: f})
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(res.Bytes)
				i++
			}
		})
	}
}

func BenchmarkImport(b *testing.B) {
	bundle := testBundle(b)
	out := filepath.Join(b.TempDir(), "x")
	res, err := Export(context.Background(), Options{Bundle: bundle, Out: out, Format: Safetensors})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(res.Bytes)
	b.ReportAllocs()
	for b.Loop() {
		if ir, err := Import(context.Background(), ImportOptions{Dir: out}); err != nil || !ir.OK {
			b.Fatal(err, ir.Problems)
		}
	}
}
