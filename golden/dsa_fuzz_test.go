package golden_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/goldset/goldset/golden"
)

// FuzzDSASelectionCheck feeds arbitrary kernel rows to the judge: it must
// never panic, must wrap its rejections in ErrSelection, and whatever it
// accepts must have exactly min(K, visible) distinct reachable entries,
// the rest -1.
func FuzzDSASelectionCheck(f *testing.F) {
	scores := []float64{9, 7, 7, 7, 3, 1, 0, -2, 5, 5} // 10 visible tokens
	bt := []int32{3, 1}                                // two pages of 8
	info := golden.DSARowInfo{Visible: 10, Kth: 7, Gap: 0, A: 9}
	wantL := []int32{0, 1, 2, 3}
	wantP := []int32{24, 25, 26, 27}
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}, false)
	f.Add([]byte{24, 0, 0, 0, 25, 0, 0, 0, 27, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, true)
	f.Fuzz(func(t *testing.T, raw []byte, physical bool) {
		got := make([]int32, 4)
		for i := range got {
			if 4*i+4 <= len(raw) {
				got[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		}
		row := golden.DSASelectionRow{Got: got, Want: wantL, Scores: scores, Info: info, Space: golden.DSALogical}
		if physical {
			row.Want, row.Space, row.BlockTable, row.PS = wantP, golden.DSAPhysical, bt, 8
		}
		err := golden.DSASelectionCheck(row, 0x1p-12)
		if err != nil {
			if !errors.Is(err, golden.ErrSelection) {
				t.Fatalf("rejection not wrapped in ErrSelection: %v", err)
			}
			return
		}
		seen := map[int32]bool{}
		for _, x := range got {
			if x == -1 {
				continue
			}
			ok := x >= 0 && x < 10
			if physical {
				ok = (x >= 24 && x < 32) || (x >= 8 && x < 10)
			}
			if !ok || seen[x] {
				t.Fatalf("accepted %v: entry %d unreachable or repeated", got, x)
			}
			seen[x] = true
		}
		if len(seen) != 4 {
			t.Fatalf("accepted %v with %d valid entries", got, len(seen))
		}
	})
}
