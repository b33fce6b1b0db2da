package diff_test

import (
	"reflect"
	"testing"

	"github.com/goldset/goldset/diff"
)

// TestByteFloatValues: the byte floats decode through the dtype table
// (float8_e4m3fn codes, float4_e2m1fn_x2 nibble pairs), not as integers.
func TestByteFloatValues(t *testing.T) {
	spec := func(e4m3, e2m1 []byte) bundleSpec {
		return bundleSpec{suiteVersion: "1.0.0", seed: 7, cases: []caseSpec{{
			id: "q-1", op: "quantize", split: "public", params: `{}`,
			tensors: []tensorSpec{
				{name: "y8", role: "golden", dtype: "float8_e4m3fn", shape: []int64{4}, data: e4m3},
				{name: "y4", role: "golden", dtype: "float4_e2m1fn_x2", shape: []int64{2}, data: e2m1},
			},
		}}}
	}
	// e4m3: 0x38 = 1, 0x40 = 2, 0xb8 = -1, 0x7f = NaN; e2m1: 0x2 = 1, 0x4 = 2, 0x7 = 6.
	old := spec([]byte{0x38, 0x40, 0xb8, 0x00}, []byte{0x42, 0x07})
	tests := []struct {
		name     string
		e4m3, e2 []byte
		want     diff.Values
	}{
		{"e4m3 1 -> 1.125", []byte{0x39, 0x40, 0xb8, 0x00}, old.cases[0].tensors[1].data,
			diff.Values{Elements: 4, Changed: 1, Share: 0.25, MaxAbs: 0.125, MaxRel: 0.125, First: []int64{0}, Worst: []int64{0}, MaxRelAt: []int64{0}}},
		{"e4m3 nan", []byte{0x38, 0x40, 0xb8, 0x7f}, old.cases[0].tensors[1].data,
			diff.Values{Elements: 4, Changed: 1, Share: 0.25, NaNMismatch: 1, FirstNonFinite: []int64{3}, First: []int64{3}}},
		{"e2m1 high nibble 2 -> 6", old.cases[0].tensors[0].data, []byte{0x72, 0x07},
			diff.Values{Elements: 2, Changed: 1, Share: 0.5, MaxAbs: 4, MaxRel: 2, First: []int64{0}, Worst: []int64{0}, MaxRelAt: []int64{0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, td := onlyTensor(t, run(t, old, spec(tc.e4m3, tc.e2), diff.Options{}))
			if td.Values == nil {
				t.Fatalf("no values: %s", td.ValuesSkipped)
			}
			if !reflect.DeepEqual(*td.Values, tc.want) {
				t.Errorf("values\n got %+v\nwant %+v", *td.Values, tc.want)
			}
		})
	}
}
