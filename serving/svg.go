package serving

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

var metricTitles = map[string]string{
	"ttft": "TTFT (time to first token)",
	"tpot": "TPOT (time per output token)",
	"itl":  "ITL (inter-token latency)",
	"e2el": "E2EL (end-to-end latency)",
}

// WriteSVG draws the latency distributions of serving runs: one panel per
// metric, the empirical CDF of each run from its per-request values (or its
// recorded p50/p90/p99 as points when the file has no per-request data), with
// p50/p90/p99 marked. Offline runs have no latencies and are left out.
func WriteSVG(w io.Writer, runs []Summary) error {
	const (
		pw, ph     = 460, 300 // panel
		ml, mr     = 60, 20
		mt, mb     = 40, 45
		cols, rows = 2, 2
		legendH    = 24
	)
	var serving []Summary
	for _, s := range runs {
		if s.Kind == Serving {
			serving = append(serving, s)
		}
	}
	width := cols * pw
	height := rows*ph + 40 + legendH*len(serving)
	acc := accuracyPanel(runs, width, height)
	height += acc.height
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="14" text-anchor="middle">Latency distributions (empirical CDF over successful requests; dots: p50, p90, p99; x axis ends at 1.15 x the largest p99)</text>`+"\n", width/2)
	for mi, m := range Metrics {
		ox, oy := (mi%cols)*pw, 30+(mi/cols)*ph
		x0, y0 := float64(ox+ml), float64(oy+mt)
		iw, ih := float64(pw-ml-mr), float64(ph-mt-mb)
		// x range: 0 .. 1.15 x the largest p99 (the tail past it is clipped).
		xmax := 0.0
		for _, s := range serving {
			if d, ok := findDist(s, m); ok {
				if d.P99.Known() {
					xmax = math.Max(xmax, float64(d.P99))
				}
			}
		}
		fmt.Fprintf(&b, `<text x="%g" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", x0, oy+mt-12, metricTitles[m])
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#444"/>`+"\n", x0, y0, iw, ih)
		if xmax <= 0 {
			fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" fill="#888">not recorded</text>`+"\n", x0+iw/2, y0+ih/2)
			continue
		}
		xmax = niceCeil(xmax * 1.15)
		px := func(v float64) float64 { return x0 + float64(math.Min(v/xmax, 1)*iw) }
		py := func(q float64) float64 { return y0 + float64((1-q)*ih) }
		for t := 0; t <= 5; t++ {
			v := xmax * float64(t) / 5
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/>`, px(v), y0, px(v), y0+ih)
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", px(v), y0+ih+15, fmtTick(v))
		}
		for _, q := range []float64{0, 0.5, 0.9, 1} {
			fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`, x0, py(q), x0+iw, py(q))
			fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end">%g</text>`+"\n", x0-5, py(q)+4, q)
		}
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">ms</text>`+"\n", x0+iw/2, y0+ih+32)
		for ri, s := range serving {
			d, ok := findDist(s, m)
			if !ok {
				continue
			}
			col := palette[ri%len(palette)]
			if n := len(d.Values); n > 0 {
				// A step function: F jumps by 1/n at each value (sampled to
				// at most about 400 steps).
				var pts strings.Builder
				step := max(1, n/400)
				fmt.Fprintf(&pts, "%.1f,%.1f", px(d.Values[0]), py(0))
				prev := 0.0
				for i := 0; i < n; i += step {
					j := min(i+step, n)
					fmt.Fprintf(&pts, " %.1f,%.1f %.1f,%.1f", px(d.Values[i]), py(prev), px(d.Values[i]), py(float64(j)/float64(n)))
					prev = float64(j) / float64(n)
				}
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`+"\n", col, pts.String())
			}
			for _, pq := range []struct {
				v Num
				q float64
			}{{d.P50, 0.5}, {d.P90, 0.9}, {d.P99, 0.99}} {
				if pq.v.Known() {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", px(float64(pq.v)), py(pq.q), col)
				}
			}
		}
	}
	ly := 30 + rows*ph + 10
	for ri, s := range serving {
		col := palette[ri%len(palette)]
		y := ly + ri*legendH
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="18" height="10" fill="%s"/>`, ml, y, col)
		src := "per-request"
		for _, d := range s.Latency {
			if d.Source != "per-request" {
				src = "recorded percentiles only for some metrics"
			}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s (%s, %s)</text>`+"\n", ml+26, y+10, xmlEscape(filepath.Base(s.Result)+" "+s.Label), s.Format, src)
	}
	b.WriteString(acc.body)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

type panel struct {
	height int
	body   string
}

// accuracyPanel draws, below the latency panels, each scored run's LongBench
// score per subset as horizontal bars (0-100), one colour per run in the
// runs' order; empty when no run was scored, so latency-only reports are
// unchanged.
func accuracyPanel(runs []Summary, width, top int) panel {
	var scored []Summary
	var subsets []string
	seen := map[string]bool{}
	for _, s := range runs {
		if s.Accuracy == nil || len(s.Accuracy.Subsets) == 0 {
			continue
		}
		scored = append(scored, s)
		for _, x := range s.Accuracy.Subsets {
			if !seen[x.Subset] {
				seen[x.Subset] = true
				subsets = append(subsets, x.Subset)
			}
		}
	}
	if len(scored) == 0 {
		return panel{}
	}
	subsets = append(subsets, "overall")
	const (
		labelW = 180
		barH   = 12
		gap    = 8
	)
	rowH := barH*len(scored) + gap
	h := 50 + rowH*len(subsets) + 20*len(scored) + 30
	x0, iw := float64(labelW), float64(width-labelW-60)
	var b strings.Builder
	y := top
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" text-anchor="middle">LongBench score per subset (serving score; 0-100, higher is better)</text>`+"\n", width/2, y+20)
	y += 35
	for t := 0; t <= 4; t++ {
		x := x0 + float64(iw*float64(t)/4) // float64(...): no FMA on arm64
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x, y, x, y+rowH*len(subsets), x, y+rowH*len(subsets)+14, 25*t)
	}
	for _, sub := range subsets {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-8, y+rowH/2+4, xmlEscape(sub))
		for ri, s := range scored {
			v := s.Accuracy.Overall
			if sub != "overall" {
				v = nan
				for _, x := range s.Accuracy.Subsets {
					if x.Subset == sub {
						v = x.Score
					}
				}
			}
			by := y + ri*barH
			if !v.Known() {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#888" font-size="10">unsupported or not scored</text>`+"\n", x0+4, by+barH-2)
				continue
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/><text x="%.1f" y="%d" font-size="10">%.2f</text>`+"\n",
				x0, by, iw*math.Max(0, math.Min(float64(v), 100))/100, barH-2, palette[ri%len(palette)], x0+iw*math.Max(0, math.Min(float64(v), 100))/100+4, by+barH-2, float64(v))
		}
		y += rowH
	}
	y += 24
	for ri, s := range scored {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="18" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", labelW, y+ri*20, palette[ri%len(palette)], labelW+26, y+ri*20+10, xmlEscape(filepath.Base(s.Result)+" "+s.Label))
	}
	return panel{height: h, body: b.String()}
}

func findDist(s Summary, m string) (Dist, bool) {
	for _, d := range s.Latency {
		if d.Metric == m {
			return d, true
		}
	}
	return Dist{}, false
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	// The largest power of ten <= v, by exact steps rather than math.Pow and
	// math.Log10 (whose last bits differ between architectures).
	e := 1.0
	for e*10 <= v {
		e *= 10
	}
	for e > v {
		e /= 10
	}
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func fmtTick(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

func xmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}
