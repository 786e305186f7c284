// Package svgchart draws the line charts of txinbox bench's SVG.
package svgchart

import (
	"bytes"
	"fmt"
	"math"
)

// Series is one line of a panel.
type Series struct {
	Name, Color string
	Y           []float64
}

// Panel draws one chart at x offset ox: a log-scale x axis, a linear y axis
// from 0.
func Panel(b *bytes.Buffer, ox float64, title, xlabel string, x []float64, ss []Series) {
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
		for _, v := range s.Y {
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
		for j, v := range s.Y {
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(x[j]), py(v))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", pts.String(), s.Color)
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", ox+left+10, top+18+float64(i)*16, s.Color, s.Name)
	}
}
