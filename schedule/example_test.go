package schedule_test

import (
	"fmt"

	"github.com/goldset/goldset/schedule"
)

// Two requests under a 16-token budget: the long prompt is chunked, and its
// chunks run in the same steps as the short request's decodes.
func ExampleSimulate() {
	reqs := []schedule.Request{
		{ID: "short", PromptTokens: 6, OutputTokens: 3},
		{ID: "long", PromptTokens: 40, OutputTokens: 2},
	}
	cfg := schedule.Config{MaxNumBatchedTokens: 16, BlockSize: 8, NumBlocks: 16}
	sum, err := schedule.Simulate(cfg, reqs, func(s schedule.Step) error {
		fmt.Printf("step %d (%d tokens, mixed %v):", s.Index, s.Tokens, s.Mixed())
		for _, r := range s.Rows {
			fmt.Printf(" %s %s %d+%d slots %d..%d;", reqs[r.Request].ID, r.Kind, r.Context, r.QLen,
				r.Slot(0, cfg.BlockSize), r.Slot(r.QLen-1, cfg.BlockSize))
		}
		fmt.Println()
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d steps, %d mixed, peak %d blocks\n", sum.Steps, sum.MixedSteps, sum.PeakBlocks)
	// Output:
	// step 0 (16 tokens, mixed false): short prefill 0+6 slots 8..13; long chunk 0+10 slots 16..25;
	// step 1 (16 tokens, mixed true): short decode 6+1 slots 14..14; long chunk 10+15 slots 26..40;
	// step 2 (16 tokens, mixed true): short decode 7+1 slots 15..15; long chunk 25+15 slots 41..55;
	// step 3 (1 tokens, mixed false): long decode 40+1 slots 56..56;
	// 4 steps, 2 mixed, peak 6 blocks
}
