package diff_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/goldset/goldset/diff"
)

func TestJSON(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           []diff.Change
	}{
		{name: "equal", old: `{"a":1,"b":[1,2]}`, new: ` { "b" : [1, 2], "a" : 1 } `},
		{name: "both absent", old: ``, new: ``},
		{name: "number forms", old: `{"x":1,"y":0.5}`, new: `{"x":1.0,"y":5e-1}`},
		{
			name: "nested", old: `{"o":{"p":{"q":1}},"k":"a"}`, new: `{"o":{"p":{"q":2}},"k":"a"}`,
			want: []diff.Change{{Path: "p.o.p.q", Old: raw(`1`), New: raw(`2`)}},
		},
		{
			name: "added removed sorted", old: `{"b":1,"c":true}`, new: `{"a":null,"b":1}`,
			want: []diff.Change{{Path: "p.a", New: raw(`null`)}, {Path: "p.c", Old: raw(`true`)}},
		},
		{
			name: "array elements", old: `{"s":[1,[2,3],4]}`, new: `{"s":[1,[2,5],"4"]}`,
			want: []diff.Change{{Path: "p.s[1][1]", Old: raw(`3`), New: raw(`5`)}, {Path: "p.s[2]", Old: raw(`4`), New: raw(`"4"`)}},
		},
		{
			name: "array length", old: `{"s":[1,2]}`, new: `{"s":[1,2,3]}`,
			want: []diff.Change{{Path: "p.s", Old: raw(`[1,2]`), New: raw(`[1,2,3]`)}},
		},
		{
			name: "type change", old: `{"s":{"a":1}}`, new: `{"s":[1]}`,
			want: []diff.Change{{Path: "p.s", Old: raw(`{"a":1}`), New: raw(`[1]`)}},
		},
		{
			name: "odd keys", old: `{"a.b":1,"":2,"<x>":"&"}`, new: `{"a.b":3,"":4,"<x>":"&&"}`,
			want: []diff.Change{
				{Path: `p[""]`, Old: raw(`2`), New: raw(`4`)},
				{Path: `p["<x>"]`, Old: raw(`"&"`), New: raw(`"&&"`)},
				{Path: `p["a.b"]`, Old: raw(`1`), New: raw(`3`)},
			},
		},
		{
			name: "absent vs object", old: ``, new: `{"a":1}`,
			want: []diff.Change{{Path: "p.a", New: raw(`1`)}},
		},
		{
			name: "absent vs scalar", old: `3`, new: ``,
			want: []diff.Change{{Path: "p", Old: raw(`3`)}},
		},
		{
			name: "big numbers", old: `{"n":18446744073709551615}`, new: `{"n":18446744073709551614}`,
			// Both round to the same float64; integers compare exactly.
			want: []diff.Change{{Path: "p.n", Old: raw(`18446744073709551615`), New: raw(`18446744073709551614`)}},
		},
		{name: "float forms", old: `{"n":1e2,"s":0.0883883476483184}`, new: `{"n":100,"s":8.83883476483184e-2}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := diff.JSON("p", []byte(tc.old), []byte(tc.new))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestJSONErrors(t *testing.T) {
	for _, bad := range []string{`{`, `{"a":1} x`, `{"a":1}{}`, `nul`, `[1,]`} {
		if _, err := diff.JSON("params", []byte(bad), []byte(`{}`)); !errors.Is(err, diff.ErrJSON) {
			t.Errorf("old %q: error %v, want ErrJSON", bad, err)
		}
		if _, err := diff.JSON("params", []byte(`{}`), []byte(bad)); !errors.Is(err, diff.ErrJSON) {
			t.Errorf("new %q: error %v, want ErrJSON", bad, err)
		}
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func FuzzDiffParams(f *testing.F) {
	seeds := [][2]string{
		{`{"m":1,"k":4096,"n":1024}`, `{"m":1,"k":4096,"n":12288}`},
		{`{"a":[1,2,{"b":null}]}`, `{"a":[1,2,{"b":false}]}`},
		{`{"x":1e400}`, `{"x":1e401}`},
		{``, `{"k":"v"}`},
		{`[]`, `{}`},
		{`"s"`, `1`},
		{`{"a":{"a":{"a":{}}}}`, `{"a":{"a":[]}}`},
		{`{"\u00e9":"\ud800"}`, `{"é":"x"}`},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ab, errA := diff.JSON("params", a, b)
		ba, errB := diff.JSON("params", b, a)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("error not symmetric: %v / %v", errA, errB)
		}
		if errA != nil {
			if !errors.Is(errA, diff.ErrJSON) {
				t.Fatalf("error %v does not wrap ErrJSON", errA)
			}
			return
		}
		if len(ab) != len(ba) {
			t.Fatalf("%d changes one way, %d the other", len(ab), len(ba))
		}
		for i, c := range ab {
			r := ba[i]
			if c.Path != r.Path || string(c.Old) != string(r.New) || string(c.New) != string(r.Old) {
				t.Fatalf("change %d not symmetric: %v vs %v", i, c, r)
			}
			if len(c.Old) == 0 && len(c.New) == 0 {
				t.Fatalf("change %v has neither side", c)
			}
			for _, v := range []json.RawMessage{c.Old, c.New} {
				if len(v) > 0 && !json.Valid(v) {
					t.Fatalf("change %v holds invalid JSON %q", c, v)
				}
			}
		}
		for _, x := range [][]byte{a, b} {
			same, err := diff.JSON("params", x, x)
			if err != nil || len(same) != 0 {
				t.Fatalf("%q against itself: %v %v", x, same, err)
			}
		}
	})
}

func ExampleJSON() {
	changes, err := diff.JSON("params",
		[]byte(`{"K":16,"anchors":{"first":true,"last":true},"scale":0.088}`),
		[]byte(`{"K":32,"anchors":{"first":true,"last":false},"granularity":"kv_group_sum","scale":0.088}`))
	if err != nil {
		panic(err)
	}
	for _, c := range changes {
		fmt.Println(c)
	}
	// Output:
	// params.K: 16 -> 32
	// params.anchors.last: true -> false
	// params.granularity: (absent) -> "kv_group_sum"
}
