package schedule

import "testing"

// BenchmarkSimulate: a 200-request workload (prompts up to 8k tokens)
// under vLLM's H200 defaults and a tight block budget (preemptions); the
// bytes are the KV slots the steps write (tokens scheduled x 4-byte slot).
func BenchmarkSimulate(b *testing.B) {
	r := splitmix{42}
	reqs := make([]Request, 200)
	for i := range reqs {
		reqs[i] = Request{PromptTokens: 1 + r.intn(8192), OutputTokens: 1 + r.intn(512), ArrivalStep: r.intn(100)}
	}
	cfg := Config{NumBlocks: 4000, NumSpeculativeTokens: 2, AcceptanceRate: 0.7}
	sum, err := Simulate(cfg, reqs, func(Step) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(sum.Tokens * 4)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Simulate(cfg, reqs, func(Step) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sum.Steps), "steps/op")
	b.ReportMetric(float64(sum.Preemptions), "preemptions/op")
}
