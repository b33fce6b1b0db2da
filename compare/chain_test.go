package compare

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestNewChainVerdict(t *testing.T) {
	pass, fail := Report{Name: "o", Status: Pass}, Report{Name: "o", Status: Fail}
	// Given out of order: the verdict orders by step, then stage, and names
	// the earliest failure although a later step failed first in the input.
	v := NewChainVerdict("c", []StageVerdict{
		{Case: "s5.1", Step: 5, Stage: 1, Reports: []Report{fail}},
		{Case: "s4.1", Step: 4, Stage: 1, Reports: []Report{pass, fail}},
		{Case: "s4.0", Step: 4, Stage: 0, Reports: []Report{pass}},
		{Case: "s5.0", Step: 5, Stage: 0, Reports: nil, Missing: []string{"o"}},
	})
	if v.OK() || v.First == nil || v.First.Case != "s4.1" {
		t.Fatalf("first divergence %+v, status %s", v.First, v.Status)
	}
	var order []string
	for _, s := range v.Stages {
		order = append(order, s.Case+"="+s.Status)
	}
	if got := strings.Join(order, " "); got != "s4.0=PASS s4.1=FAIL s5.0=SKIPPED s5.1=FAIL" {
		t.Errorf("stages %s", got)
	}
	var b bytes.Buffer
	v.WriteText(&b)
	if !strings.Contains(b.String(), "first divergence: step 4, stage 1") || !strings.Contains(b.String(), "not given: o") {
		t.Errorf("text:\n%s", b.String())
	}
	if v := NewChainVerdict("c", []StageVerdict{{Case: "a", Reports: []Report{pass}}}); !v.OK() || v.First != nil {
		t.Errorf("all pass: %s %+v", v.Status, v.First)
	}
	if v := NewChainVerdict("c", []StageVerdict{{Case: "a"}}); v.OK() || v.Status != Skipped {
		t.Errorf("nothing judged: %s, want SKIPPED", v.Status)
	}
}

// ExampleNewChainVerdict: a chain whose write at step 8 is wrong; the
// attention after it fails too, and the verdict names the write.
func ExampleNewChainVerdict() {
	pass, fail := Report{Name: "key_cache_out", Status: Pass}, Report{Name: "out", Status: Fail}
	v := NewChainVerdict("chain", []StageVerdict{
		{Case: "chain.s7.reshape_and_cache", Op: "reshape_and_cache", Step: 7, Stage: 0, Reports: []Report{pass}},
		{Case: "chain.s7.unified_attention", Op: "unified_attention", Step: 7, Stage: 1, Reports: []Report{{Name: "out", Status: Pass}}},
		{Case: "chain.s8.reshape_and_cache", Op: "reshape_and_cache", Step: 8, Stage: 0, Reports: []Report{{Name: "key_cache_out", Status: Fail}}},
		{Case: "chain.s8.unified_attention", Op: "unified_attention", Step: 8, Stage: 1, Reports: []Report{fail}},
	})
	v.WriteText(os.Stdout)
	// Output:
	// chain chain: 4 stage case(s)
	//   step 7      stage 0 reshape_and_cache    PASS    chain.s7.reshape_and_cache
	//   step 7      stage 1 unified_attention    PASS    chain.s7.unified_attention
	//   step 8      stage 0 reshape_and_cache    FAIL    chain.s8.reshape_and_cache  (failed: key_cache_out)
	//   step 8      stage 1 unified_attention    FAIL    chain.s8.unified_attention  (failed: out)
	// first divergence: step 8, stage 0 (reshape_and_cache), case chain.s8.reshape_and_cache
	// FAIL
}
