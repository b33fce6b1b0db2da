package longbench

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"strconv"
	"strings"
)

// HistogramPNG options.
type HistogramMarks struct {
	Bands      []int // band upper edges (prompt + output tokens), drawn red
	ContextLen int   // drawn blue; 0: none
}

// WriteHistogramPNG draws the histogram of lengths (prompt tokens) as a PNG:
// bars over 48 equal-width bins from 0 to the largest of the lengths, band
// edges and context, with the band edges as dashed red lines and the
// context length as a blue line. Only the standard library is used (a
// built-in 5x7 font labels the axes).
func WriteHistogramPNG(w io.Writer, title string, lengths []int, marks HistogramMarks) error {
	const (
		width, height            = 960, 480
		left, right, top, bottom = 80, 24, 56, 64
		bins                     = 48
	)
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Bounds(), color.RGBA{255, 255, 255, 255})
	xmax := 1
	for _, l := range lengths {
		xmax = max(xmax, l)
	}
	for _, b := range marks.Bands {
		xmax = max(xmax, b)
	}
	xmax = max(xmax, marks.ContextLen)
	xmax = niceCeil(xmax)
	counts := make([]int, bins)
	for _, l := range lengths {
		i := int(int64(l) * bins / int64(xmax+1))
		counts[min(max(i, 0), bins-1)]++
	}
	peak := 1
	for _, c := range counts {
		peak = max(peak, c)
	}
	ymax := niceCeil(peak)
	pw, ph := width-left-right, height-top-bottom
	xpix := func(v int) int { return left + int(int64(v)*int64(pw)/int64(xmax)) }
	ypix := func(c int) int { return top + ph - int(int64(c)*int64(ph)/int64(ymax)) }
	black := color.RGBA{0, 0, 0, 255}
	grey := color.RGBA{220, 220, 220, 255}
	// grid and y ticks
	for _, c := range ticks(ymax, 5) {
		y := ypix(c)
		fill(img, image.Rect(left, y, left+pw, y+1), grey)
		s := strconv.Itoa(c)
		drawText(img, left-8-textWidth(s, 2), y-7, s, 2, black)
	}
	// bars
	bar := color.RGBA{70, 110, 160, 255}
	for i, c := range counts {
		if c == 0 {
			continue
		}
		x0 := left + i*pw/bins
		x1 := left + (i+1)*pw/bins
		fill(img, image.Rect(x0+1, ypix(c), x1-1, top+ph), bar)
	}
	// marks
	red := color.RGBA{210, 30, 30, 255}
	for _, b := range marks.Bands {
		x := xpix(b)
		for y := top; y < top+ph; y += 8 {
			fill(img, image.Rect(x-1, y, x+1, min(y+5, top+ph)), red)
		}
	}
	if marks.ContextLen > 0 {
		x := xpix(marks.ContextLen)
		fill(img, image.Rect(x-1, top, x+1, top+ph), color.RGBA{30, 60, 220, 255})
	}
	// axes and x ticks
	fill(img, image.Rect(left, top, left+1, top+ph+1), black)
	fill(img, image.Rect(left, top+ph, left+pw+1, top+ph+1), black)
	for _, v := range ticks(xmax, 8) {
		x := xpix(v)
		fill(img, image.Rect(x, top+ph, x+1, top+ph+6), black)
		s := kLabel(v)
		drawText(img, x-textWidth(s, 2)/2, top+ph+12, s, 2, black)
	}
	drawText(img, left, 8, strings.ToUpper(title), 2, black)
	legend := "BARS: PROMPT TOKENS"
	if len(marks.Bands) > 0 {
		legend += "  RED: BANDS (PROMPT+OUTPUT)"
	}
	if marks.ContextLen > 0 {
		legend += "  BLUE: CONTEXT " + strconv.Itoa(marks.ContextLen)
	}
	drawText(img, 8, height-22, legend, 2, black)
	drawText(img, 8, top-22, "COUNT", 2, black)
	return png.Encode(w, img)
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v int) int {
	p := 1
	for {
		for _, m := range []int{1, 2, 5} {
			if m*p >= v {
				return m * p
			}
		}
		p *= 10
	}
}

// ticks returns about n round values in [0, top].
func ticks(top, n int) []int {
	step := niceCeil(max(1, top/n))
	var t []int
	for v := 0; v <= top; v += step {
		t = append(t, v)
	}
	return t
}

// kLabel writes 8192 as 8192 and 40000 as 40K (round thousands only).
func kLabel(v int) string {
	if v >= 10000 && v%1000 == 0 {
		return strconv.Itoa(v/1000) + "K"
	}
	return strconv.Itoa(v)
}

func textWidth(s string, scale int) int { return len(s) * 6 * scale }

// drawText renders s (upper-case letters, digits and a few symbols; other
// characters as blanks) in the built-in 5x7 font.
func drawText(img *image.RGBA, x, y int, s string, scale int, c color.RGBA) {
	for i, r := range s {
		g, ok := font5x7[r]
		if !ok {
			continue
		}
		for row, bits := range g {
			for col := 0; col < 5; col++ {
				if bits[col] == '#' {
					x0 := x + (i*6+col)*scale
					y0 := y + row*scale
					fill(img, image.Rect(x0, y0, x0+scale, y0+scale), c)
				}
			}
		}
	}
}

var font5x7 = map[rune][7]string{
	'0': {" ### ", "#   #", "#  ##", "# # #", "##  #", "#   #", " ### "},
	'1': {"  #  ", " ##  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "},
	'2': {" ### ", "#   #", "    #", "   # ", "  #  ", " #   ", "#####"},
	'3': {"#####", "   # ", "  #  ", "   # ", "    #", "#   #", " ### "},
	'4': {"   # ", "  ## ", " # # ", "#  # ", "#####", "   # ", "   # "},
	'5': {"#####", "#    ", "#### ", "    #", "    #", "#   #", " ### "},
	'6': {"  ## ", " #   ", "#    ", "#### ", "#   #", "#   #", " ### "},
	'7': {"#####", "    #", "   # ", "  #  ", " #   ", " #   ", " #   "},
	'8': {" ### ", "#   #", "#   #", " ### ", "#   #", "#   #", " ### "},
	'9': {" ### ", "#   #", "#   #", " ####", "    #", "   # ", " ##  "},
	'A': {" ### ", "#   #", "#   #", "#####", "#   #", "#   #", "#   #"},
	'B': {"#### ", "#   #", "#   #", "#### ", "#   #", "#   #", "#### "},
	'C': {" ### ", "#   #", "#    ", "#    ", "#    ", "#   #", " ### "},
	'D': {"#### ", "#   #", "#   #", "#   #", "#   #", "#   #", "#### "},
	'E': {"#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#####"},
	'F': {"#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#    "},
	'G': {" ### ", "#   #", "#    ", "# ###", "#   #", "#   #", " ####"},
	'H': {"#   #", "#   #", "#   #", "#####", "#   #", "#   #", "#   #"},
	'I': {" ### ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "},
	'J': {"  ###", "   # ", "   # ", "   # ", "   # ", "#  # ", " ##  "},
	'K': {"#   #", "#  # ", "# #  ", "##   ", "# #  ", "#  # ", "#   #"},
	'L': {"#    ", "#    ", "#    ", "#    ", "#    ", "#    ", "#####"},
	'M': {"#   #", "## ##", "# # #", "# # #", "#   #", "#   #", "#   #"},
	'N': {"#   #", "#   #", "##  #", "# # #", "#  ##", "#   #", "#   #"},
	'O': {" ### ", "#   #", "#   #", "#   #", "#   #", "#   #", " ### "},
	'P': {"#### ", "#   #", "#   #", "#### ", "#    ", "#    ", "#    "},
	'Q': {" ### ", "#   #", "#   #", "#   #", "# # #", "#  # ", " ## #"},
	'R': {"#### ", "#   #", "#   #", "#### ", "# #  ", "#  # ", "#   #"},
	'S': {" ####", "#    ", "#    ", " ### ", "    #", "    #", "#### "},
	'T': {"#####", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  "},
	'U': {"#   #", "#   #", "#   #", "#   #", "#   #", "#   #", " ### "},
	'V': {"#   #", "#   #", "#   #", "#   #", "#   #", " # # ", "  #  "},
	'W': {"#   #", "#   #", "#   #", "# # #", "# # #", "# # #", " # # "},
	'X': {"#   #", "#   #", " # # ", "  #  ", " # # ", "#   #", "#   #"},
	'Y': {"#   #", "#   #", " # # ", "  #  ", "  #  ", "  #  ", "  #  "},
	'Z': {"#####", "    #", "   # ", "  #  ", " #   ", "#    ", "#####"},
	'+': {"     ", "  #  ", "  #  ", "#####", "  #  ", "  #  ", "     "},
	'-': {"     ", "     ", "     ", "#####", "     ", "     ", "     "},
	'(': {"   # ", "  #  ", " #   ", " #   ", " #   ", "  #  ", "   # "},
	')': {" #   ", "  #  ", "   # ", "   # ", "   # ", "  #  ", " #   "},
	':': {"     ", "  #  ", "  #  ", "     ", "  #  ", "  #  ", "     "},
	',': {"     ", "     ", "     ", "     ", "  #  ", "  #  ", " #   "},
	'.': {"     ", "     ", "     ", "     ", "     ", " ##  ", " ##  "},
	'/': {"     ", "    #", "   # ", "  #  ", " #   ", "#    ", "     "},
	'=': {"     ", "     ", "#####", "     ", "#####", "     ", "     "},
	'_': {"     ", "     ", "     ", "     ", "     ", "     ", "#####"},
}

// histogramTitle is the PNG's heading for a build.
func histogramTitle(n int, st Stats) string {
	return fmt.Sprintf("%d prompts: min %d p50 %d max %d mean %.0f", n, st.Min, st.P50, st.Max, st.Mean)
}
