package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/goldset/goldset/suite"
)

func TestListOps(t *testing.T) {
	code, out, _ := run(t, "list", "--ops", "--json")
	var doc opsResult
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || !doc.OK {
		t.Fatalf("list --ops --json: %d %s", code, out)
	}
	ops := doc.Ops
	var names []string
	for _, op := range ops {
		names = append(names, op.Name)
		if len(op.Inputs) == 0 || len(op.Outputs) == 0 {
			t.Errorf("%s: no inputs or outputs: %+v", op.Name, op)
		}
		// dsa_indexer's layout picks its tensors, and dsa_index_cache (fp32
		// scales) and mxfp4_quantize (rceil below 2^-100) add accepted
		// alternatives: scripts must not require all.
		if op.ByParams != (op.Name == "dsa_indexer" || op.Name == "dsa_index_cache" || op.Name == "mxfp4_quantize") {
			t.Errorf("%s: by_params %v", op.Name, op.ByParams)
		}
	}
	if !slices.Equal(names, suite.Ops()) {
		t.Errorf("list --ops names %v, suite has %v", names, suite.Ops())
	}
	code, out, _ = run(t, "list", "--ops")
	if code != 0 || !strings.Contains(out, "selected (set)") || !strings.Contains(out, "dense_out (aux)") {
		t.Errorf("list --ops: %d %s", code, out)
	}
}
