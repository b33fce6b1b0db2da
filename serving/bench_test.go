package serving

import "testing"

func BenchmarkParseResultDetailed(b *testing.B) {
	w := mustWorkload(b, readTestdata(b, "synth100/manifest.json"))
	data := consistentRun(w).JSON(1)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseResult(data, -1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckAndSummarize(b *testing.B) {
	w := mustWorkload(b, readTestdata(b, "synth100/manifest.json"))
	data := consistentRun(w).JSON(1)
	r := mustResult(b, data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if v := Check(w, r, CheckOptions{}); !v.OK {
			b.Fatal("check failed")
		}
		Summarize(r)
	}
}
