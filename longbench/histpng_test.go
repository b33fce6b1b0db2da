package longbench

import (
	"bytes"
	"image/png"
	"testing"
)

// The PNG decodes, its bars stand where the lengths are, and the band edges
// (red) and the context (blue) are drawn at their x positions.
func TestWriteHistogramPNG(t *testing.T) {
	lengths := []int{1000, 1000, 1000, 30000}
	marks := HistogramMarks{Bands: []int{8000, 32000}, ContextLen: 40000}
	var buf bytes.Buffer
	if err := WriteHistogramPNG(&buf, "test", lengths, marks); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	const left, right, top, bottom, width, height = 80, 24, 56, 64, 960, 480
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Fatalf("bounds %v", b)
	}
	xmax := niceCeil(40000) // 50000
	x := func(v int) int { return left + v*(width-left-right)/xmax }
	colour := func(px, py int) (r, g, b uint32) {
		r, g, b, _ = img.At(px, py).RGBA()
		return r >> 8, g >> 8, b >> 8
	}
	isRed := func(px int) bool {
		for y := top; y < height-bottom; y++ {
			if r, g, b := colour(px, y); r > 180 && g < 80 && b < 80 {
				return true
			}
		}
		return false
	}
	for _, e := range marks.Bands {
		if !isRed(x(e)) {
			t.Errorf("no red band line at %d (x=%d)", e, x(e))
		}
	}
	if isRed(x(20000)) {
		t.Error("red where no band is")
	}
	if r, g, b := colour(x(40000), top+10); !(b > 180 && r < 80 && g < 100) {
		t.Errorf("context line colour %d %d %d", r, g, b)
	}
	// A bar of height 3 (of y max 5) at 1000, of height 1 at 30000, none at 20000.
	barTop := func(v int) int {
		bin := v * 48 / (xmax + 1)
		mid := left + (2*bin+1)*(width-left-right)/96
		for y := top; y < height-bottom; y++ {
			if r, g, b := colour(mid, y); r == 70 && g == 110 && b == 160 {
				return y
			}
		}
		return -1
	}
	ph := height - top - bottom
	if y := barTop(1000); y != top+ph-3*ph/5 {
		t.Errorf("bar at 1000 starts at y=%d, want %d", y, top+ph-3*ph/5)
	}
	if y := barTop(30000); y != top+ph-ph/5 {
		t.Errorf("bar at 30000 starts at y=%d, want %d", y, top+ph-ph/5)
	}
	if y := barTop(20000); y != -1 {
		t.Errorf("bar at 20000 (y=%d)", y)
	}
}
