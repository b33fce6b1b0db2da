package serving_test

import (
	"context"
	"fmt"

	"github.com/goldset/goldset/serving"
)

func ExampleCheck() {
	w, err := serving.ReadWorkload("testdata/workload")
	if err != nil {
		panic(err)
	}
	r, err := serving.ReadResult("testdata/vllm-serve-detailed.json", -1)
	if err != nil {
		panic(err)
	}
	v := serving.Check(w, r, serving.CheckOptions{})
	fmt.Println(v.OK, v.Format, v.N, len(v.Failures))
	// Output: true vllm-bench-serve 4 0
}

func ExampleSize() {
	m, _ := serving.LoadModel("qwen3-8b")
	s, err := serving.Size(m, nil, serving.SizeOptions{KVBudget: 60 << 30})
	if err != nil {
		panic(err)
	}
	fmt.Println(serving.FormatBytes(s.BytesPerToken), serving.FormatBytes(s.BytesAtContext), s.Budget.ConcurrencyAtContext)
	// Output: 144.000 KiB 5.625 GiB 10
}

func ExampleSummarize() {
	r, _ := serving.ReadResult("testdata/vllm-serve-detailed.json", -1)
	s := serving.Summarize(r)
	for _, d := range s.Latency {
		fmt.Printf("%s p50 %.1f ms (%s)\n", d.Metric, float64(d.P50), d.Source)
	}
	// Output:
	// ttft p50 694.6 ms (per-request)
	// tpot p50 13.0 ms (per-request)
	// itl p50 12.9 ms (per-request)
	// e2el p50 2543.2 ms (per-request)
}

func ExampleScoreRun() {
	w, err := serving.ReadWorkload("testdata/score/workload-v2")
	if err != nil {
		panic(err)
	}
	rep, _, err := serving.ScoreRun(context.Background(), w, "testdata/score/data-v2", "testdata/score/v2-sparse.json", -1)
	if err != nil {
		panic(err)
	}
	for _, s := range rep.Subsets {
		fmt.Println(s.Subset, s.Metric, s.N, float64(s.Score))
	}
	// Output: longbench_v2 longbench_v2_choice 6 66.7
}

func ExampleScoreDeltas() {
	w, _ := serving.ReadWorkload("testdata/score/workload-v2")
	ctx := context.Background()
	base, bg, _ := serving.ScoreRun(ctx, w, "testdata/score/data-v2", "testdata/score/v2-dense.json", -1)
	run, rg, _ := serving.ScoreRun(ctx, w, "testdata/score/data-v2", "testdata/score/v2-sparse.json", -1)
	ds, err := serving.ScoreDeltas(base, run, serving.BootstrapOptions{Resamples: 2000, Seed: 7})
	if err != nil {
		panic(err)
	}
	d := ds[0]
	fmt.Printf("%s n=%d delta %+.2f CI [%+.1f, %+.1f]\n", d.Subset, d.N, float64(d.Delta), float64(d.Lo), float64(d.Hi))
	a := serving.GreedyAgreement(w, bg, rg, base, run, nil)
	fmt.Printf("%s: %d of %d identical\n", a.Unit, a.Identical, a.Compared)
	// Output:
	// longbench_v2 n=5 delta +6.70 CI [-60.0, +60.0]
	// token ids (recorded): 2 of 6 identical
}
