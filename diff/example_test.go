package diff_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goldset/goldset/diff"
)

func ExampleBundles() {
	root, err := os.MkdirTemp("", "goldset-diff-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	// Two hand-built bundles; the new one changes one golden element and
	// the b_layout parameter.
	old := baseSpec()
	regenerated := old.clone()
	setF32(regenerated.tensor("mm-1", "c"), 1*20+2*5+3, 99)
	regenerated.cases[0].params = `{"m":3,"k":4,"n":5,"opts":{"b_layout":"NK","tiles":[16,16]}}`
	oldDir, newDir := filepath.Join(root, "old"), filepath.Join(root, "new")
	if _, err := buildBundle(oldDir, old); err != nil {
		panic(err)
	}
	if _, err := buildBundle(newDir, regenerated); err != nil {
		panic(err)
	}

	r, err := diff.Bundles(context.Background(), oldDir, newDir, diff.Options{Jobs: 4})
	if err != nil {
		panic(err)
	}
	fmt.Println("identical:", r.Identical())
	fmt.Printf("tensors: %+v\n", r.Counts.Tensors)
	for _, c := range r.Cases {
		for _, ch := range c.Changes {
			fmt.Printf("%s: %s\n", c.ID, ch)
		}
		for _, t := range c.Tensors {
			v := t.Values
			fmt.Printf("%s/%s: %d of %d changed, first %v, worst %v, max abs %g\n",
				c.ID, t.Name, v.Changed, v.Elements, v.First, v.Worst, v.MaxAbs)
		}
	}
	// Output:
	// identical: false
	// tensors: {Unchanged:4 Changed:1 Added:0 Removed:0}
	// mm-1: params.opts.b_layout: "KN" -> "NK"
	// mm-1/c: 1 of 60 changed, first [1 2 3], worst [1 2 3], max abs 82.5
}

func ExampleReport_WriteText() {
	r := &diff.Report{
		RelFloor: diff.DefaultRelFloor,
		Counts: diff.Counts{
			Cases:   diff.Tally{Unchanged: 10, Changed: 1, Added: 1},
			Tensors: diff.Tally{Unchanged: 40, Changed: 2, Added: 3},
		},
		Manifest: []diff.Change{{Path: "generator", Old: json.RawMessage(`"gen-1"`), New: json.RawMessage(`"gen-2"`)}},
		Cases: []diff.CaseDiff{
			{ID: "quest-3", Status: diff.StatusChanged, Op: "quest", Tensors: []diff.TensorDiff{
				{Name: "out", Status: diff.StatusChanged, Role: "golden", DType: "float16", Shape: []int64{2, 32, 128},
					DataChanged: true, Values: &diff.Values{Elements: 8192, Changed: 3, Share: 3.0 / 8192,
						MaxAbs: 0.0009765625, MaxRel: 0.0019, First: []int64{0, 4, 17}, Worst: []int64{1, 9, 100}, MaxRelAt: []int64{1, 9, 100}}},
				{Name: "selected", Status: diff.StatusChanged, Role: "golden", DType: "int32", Shape: []int64{2, 32, 16},
					Changes:     []diff.Change{{Path: "shape", Old: json.RawMessage(`[2,32,8]`), New: json.RawMessage(`[2,32,16]`)}},
					DataChanged: true, ValuesSkipped: "shape changed"},
			}},
			{ID: "quest-9", Status: diff.StatusAdded, Op: "quest", Tensors: make([]diff.TensorDiff, 3)},
		},
	}
	r.WriteText(os.Stdout)
	// Output:
	// cases:   10 unchanged, 1 changed, 1 added, 0 removed
	// tensors: 40 unchanged, 2 changed, 3 added, 0 removed
	// relative changes are |new - old| / max(|old|, 1e-06)
	// ~ manifest generator: "gen-1" -> "gen-2"
	// ~ tensor quest-3/out: values: 3 of 8192 elements changed (0.03662%), max abs 0.0009766 at [1,9,100], max rel 0.0019 at [1,9,100], first at [0,4,17]
	// ~ tensor quest-3/selected: shape: [2,32,8] -> [2,32,16]
	// ~ tensor quest-3/selected: data changed, values not compared: shape changed
	// + case quest-9 (quest, 3 tensors)
}
