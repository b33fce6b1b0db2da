package suite

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/goldset/goldset/manifests"
)

// FuzzPlanCase feeds arbitrary parameters to every op's parser: no panic,
// every rejection wraps ErrParams, every acceptance re-encodes to params
// that are accepted again with the same size estimate.
func FuzzPlanCase(f *testing.F) {
	for _, n := range []string{"stage1-basic", "stage2-paged", "peer-sizes", "stage4-mixed", "stage4-steps", "stage5-dsa"} {
		r, err := manifests.LookupSuite(n)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range r.Cases {
			f.Add(c.Op, []byte(c.Params))
		}
	}
	f.Add("quest", []byte(`{"hq":1,"hkv":1,"d":1,"bs":1,"dtype":"float16","context_lens":[1],"k":1,"anchor_last":false}`))
	f.Fuzz(func(t *testing.T, op string, params []byte) {
		c := manifests.RecipeCase{ID: "f", Op: op, Split: "public", Params: json.RawMessage(params)}
		p, err := planCase(c)
		if err != nil {
			if !errors.Is(err, ErrParams) && !errors.Is(err, ErrUnknownOp) {
				t.Fatalf("error does not wrap ErrParams: %v", err)
			}
			return
		}
		c.Params = p.params
		p2, err := planCase(c)
		if err != nil {
			t.Fatalf("canonical params %s rejected: %v", p.params, err)
		}
		if p2.bytes != p.bytes || string(p2.params) != string(p.params) {
			t.Fatalf("canonical params not stable: %s -> %s", p.params, p2.params)
		}
	})
}
