package bench

import (
	"bytes"
	"fmt"

	"github.com/txinbox/txinbox/internal/cli/bench/svgchart"
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
	svgchart.Panel(&b, 0, "messages/s against batch size", "batch size (log)", bx, []svgchart.Series{{Name: "txinbox", Color: "#1f77b4", Y: tx}, {Name: "ceiling", Color: "#d62728", Y: cy}})
	var gx, gy []float64
	for _, g := range rep.Growth {
		gx, gy = append(gx, float64(max(g.InboxRows, 1))), append(gy, g.MsgsPerSec)
	}
	svgchart.Panel(&b, 480, "messages/s against inbox rows", "inbox rows (log; 1 = empty)", gx, []svgchart.Series{{Name: "txinbox", Color: "#1f77b4", Y: gy}})
	fmt.Fprint(&b, "</svg>\n")
	return b.Bytes()
}
