package console

import (
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// counterRow is one outcome counter of this process.
type counterRow struct {
	Scope, Source, Outcome string
	Value                  float64
}

// gatherCounters reads the outcome counters (any namespace's
// ..._messages_total with scope, source and outcome labels) from g.
func gatherCounters(g prometheus.Gatherer) ([]counterRow, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var out []counterRow
	for _, mf := range mfs {
		if !strings.HasSuffix(mf.GetName(), "_messages_total") {
			continue
		}
		for _, m := range mf.GetMetric() {
			row := counterRow{Value: m.GetCounter().GetValue()}
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "scope":
					row.Scope = l.GetValue()
				case "source":
					row.Source = l.GetValue()
				case "outcome":
					row.Outcome = l.GetValue()
				}
			}
			if row.Outcome != "" {
				out = append(out, row)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Scope+"\x00"+a.Source+"\x00"+a.Outcome < b.Scope+"\x00"+b.Source+"\x00"+b.Outcome
	})
	return out, nil
}
