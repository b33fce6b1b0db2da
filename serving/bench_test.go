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

// A gov_report-sized pair: a 400-word prediction in 20 sentences against a
// 600-word reference in 30.
func BenchmarkRougeL(b *testing.B) {
	var pred, ref []byte
	for i := range 600 {
		w := []byte(" w" + string(rune('a'+i%23)) + string(rune('a'+i%7)))
		if i < 400 {
			pred = append(pred, w...)
			if i%20 == 19 {
				pred = append(pred, '.')
			}
		}
		ref = append(ref, w...)
		if i%20 == 19 {
			ref = append(ref, '.')
		}
	}
	b.SetBytes(int64(len(pred) + len(ref)))
	b.ReportAllocs()
	for b.Loop() {
		if RougeL(string(pred), string(ref)) <= 0 {
			b.Fatal("no overlap")
		}
	}
}

func BenchmarkScoreV1Fixture(b *testing.B) {
	w, err := ReadWorkload("testdata/score/workload")
	if err != nil {
		b.Fatal(err)
	}
	truths, _, err := LoadTruths(b.Context(), w, "testdata/score/data")
	if err != nil {
		b.Fatal(err)
	}
	g, err := ReadGenerations("testdata/score/dense.json", -1)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, t := range g.Texts {
		n += len(t)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Score(w, truths, g); err != nil {
			b.Fatal(err)
		}
	}
}
