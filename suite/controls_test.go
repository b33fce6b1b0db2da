package suite

import (
	"path/filepath"
	"testing"

	"github.com/goldset/goldset/manifests"
)

// checkControls proves, for every case of a built bundle, that compare
// accepts the golden itself and the honest low-precision kernels and
// rejects every negative control: the tolerances are neither vacuous nor
// flaky.
func checkControls(t *testing.T, dir string, m *manifests.Manifest) {
	t.Helper()
	for i := range m.Cases {
		c := &m.Cases[i]
		// The stored golden, judged against the truth, passes.
		for _, tn := range c.Tensors {
			if tn.Role != manifests.RoleGolden {
				continue
			}
			d := caseData{dir: dir, c: c}
			v, _, err := d.floats(tn.Name)
			if err != nil {
				t.Fatal(err)
			}
			ok, reps, err := Judge(dir, c, Control{Outputs: []ControlOutput{{Name: tn.Name, DType: tn.DType, Shape: tn.Shape, Values: v}}})
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				t.Errorf("%s: the golden %s fails its own tolerance: %v", c.ID, tn.Name, reps[0].Failed)
			}
		}
		ctl, err := Controls(dir, c)
		if err != nil {
			t.Fatal(err)
		}
		negatives := 0
		for _, k := range ctl {
			ok, reps, err := Judge(dir, c, k)
			if err != nil {
				t.Fatalf("%s/%s: %v", c.ID, k.Name, err)
			}
			if ok != k.Pass {
				var why []string
				for _, r := range reps {
					why = append(why, r.Name+": "+r.Status)
					why = append(why, r.Failed...)
				}
				t.Errorf("%s: control %s (%s): compare says pass=%v, want %v %v", c.ID, k.Name, k.Note, ok, k.Pass, why)
			}
			if !k.Pass {
				negatives++
			}
		}
		if negatives == 0 {
			t.Errorf("%s: no negative control", c.ID)
		}
	}
}

func TestControlsTiny(t *testing.T) {
	r := tiny(t)
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Jobs: 2, Splits: []string{"public", "benchmark"}})
	checkControls(t, filepath.Join(dir, r.Name), m)
}

// TestControlsShipped runs the controls on every public case of the
// shipped stage-1, stage-2 and stage-6 recipes (the split contestants are
// graded on).
func TestControlsShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every public stage-1 and stage-2 case; TestControlsTiny covers every op in -short")
	}
	for _, name := range []string{"stage1-basic", "stage2-paged", "stage4-mixed", "stage5-dsa", "stage6-mxfp4"} {
		t.Run(name, func(t *testing.T) {
			r, err := manifests.LookupSuite(name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			m := buildTo(t, r, dir, Options{Jobs: 2, Splits: []string{manifests.SplitPublic}})
			checkControls(t, filepath.Join(dir, r.Name), m)
		})
	}
}
