package bench

import (
	"bytes"
	"fmt"
	"math"
)

// benchChart draws two line charts as one SVG: messages/s against batch
// size (txinbox and the ceiling) and against inbox size (txinbox).
func benchChart(rep *benchReport) []byte {
	var b bytes.Buffer
	fmt.Fprint(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="960" height="400" font-family="sans-serif" font-size="12">`+"\n")
	fmt.Fprint(&b, `<rect width="960" height="400" fill="white"/>`+"\n")
	var bx, tx, cy []float64
	for _, p := range rep.BatchSizes {
		bx, tx, cy = append(bx, float64(p.Batch)), append(tx, p.Txinbox), append(cy, p.Ceiling)
	}
	panel(&b, 0, "messages/s against batch size", "batch size (log)", bx, []series{{"txinbox", "#1f77b4", tx}, {"ceiling", "#d62728", cy}})
	var gx, gy []float64
	for _, g := range rep.Growth {
		gx, gy = append(gx, float64(max(g.InboxRows, 1))), append(gy, g.MsgsPerSec)
	}
	panel(&b, 480, "messages/s against inbox rows", "inbox rows (log; 1 = empty)", gx, []series{{"txinbox", "#1f77b4", gy}})
	fmt.Fprint(&b, "</svg>\n")
	return b.Bytes()
}

type series struct {
	name, color string
	y           []float64
}

// panel draws one chart at x offset ox: a log-scale x axis, a linear y axis
// from 0.
func panel(b *bytes.Buffer, ox float64, title, xlabel string, x []float64, ss []series) {
	const left, top, w, h = 70.0, 40.0, 380.0, 300.0
	fmt.Fprintf(b, `<text x="%.0f" y="22" font-size="14">%s</text>`+"\n", ox+left, title)
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#888"/>`+"\n", ox+left, top, w, h)
	fmt.Fprintf(b, `<text x="%.0f" y="385">%s</text>`+"\n", ox+left+w/2-60, xlabel)
	if len(x) == 0 {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f">not measured</text>`+"\n", ox+left+w/2-40, top+h/2)
		return
	}
	ymax := 1.0
	for _, s := range ss {
		for _, v := range s.y {
			ymax = math.Max(ymax, v)
		}
	}
	lx0, lx1 := math.Log10(x[0]), math.Log10(x[len(x)-1])
	if lx1 == lx0 {
		lx1 = lx0 + 1
	}
	px := func(v float64) float64 { return ox + left + (math.Log10(v)-lx0)/(lx1-lx0)*w }
	py := func(v float64) float64 { return top + h - v/ymax*h }
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="end">%.0f</text>`+"\n", ox+left-5, py(v)+4, v)
	}
	for _, v := range x {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">%.0f</text>`+"\n", px(v), top+h+15, v)
	}
	for i, s := range ss {
		var pts bytes.Buffer
		for j, v := range s.y {
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(x[j]), py(v))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", pts.String(), s.color)
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", ox+left+10, top+18+float64(i)*16, s.color, s.name)
	}
}
