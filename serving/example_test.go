package serving_test

import (
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
