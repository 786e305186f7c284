package console

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/txinbox/txinbox/store"
)

// timelineCache keeps the last hour's counts for a while, so that many
// open overviews cost one query.
type timelineCache struct {
	until time.Time
	mcs   []store.MinuteCount
	err   error // a query that ran out of time: kept as long, not run again by every viewer
}

// The counts are kept timelineTTL, or ten times as long as their query
// took, so the chart never keeps the database busy more than a tenth of
// the time; a query past timelineTimeout gives up (the overview says so).
const (
	timelineTTL     = 15 * time.Second
	timelineTimeout = 5 * time.Second
)

// outcomes returns the stored outcomes per minute of the last hour, or
// none when the store cannot count them.
func (c *console) outcomes(ctx context.Context) ([]store.MinuteCount, error) {
	tl, ok := c.cfg.Admin.(store.Timeline)
	if !ok {
		return nil, nil
	}
	c.timelineMu.Lock()
	defer c.timelineMu.Unlock()
	start := now()
	if start.Before(c.timeline.until) {
		return c.timeline.mcs, c.timeline.err
	}
	qctx, cancel := context.WithTimeout(ctx, timelineTimeout)
	defer cancel()
	mcs, err := tl.OutcomesPerMinute(qctx, start.Truncate(time.Minute).Add(-59*time.Minute))
	if err != nil {
		if qctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("the last hour holds too many rows to count within %s (read the Prometheus metrics instead): %w", timelineTimeout, err)
			c.timeline = timelineCache{until: now().Add(max(timelineTTL, 10*now().Sub(start))), err: err}
		}
		return nil, err
	}
	c.timeline = timelineCache{until: now().Add(max(timelineTTL, 10*now().Sub(start))), mcs: mcs}
	return mcs, nil
}

// chart is the SVG bar chart of one scope and source: one stacked bar per
// minute of the last hour.
type chart struct {
	Scope, Source string
	Bars          []bar
	Max           int64 // the tallest minute
	Totals        store.MinuteCount
	Width, Height int
	Ticks         []tick
}

// bar is one rectangle of a chart: an outcome's count in one minute.
type bar struct {
	Class        string // processed, dead-lettered, drift
	X, Y, W, H   float64
	Minute       time.Time
	Count        int64
	OutcomeLabel string
}

// tick labels the time axis.
type tick struct {
	X     float64
	Label string
}

const (
	chartW, chartH = 600, 120
	minutes        = 60
)

// charts lays out one chart per scope and source from the minute counts.
func charts(mcs []store.MinuteCount, t time.Time) []chart {
	start := t.Truncate(time.Minute).Add(-(minutes - 1) * time.Minute)
	byKey := map[[2]string][]store.MinuteCount{}
	for _, mc := range mcs {
		k := [2]string{mc.Scope, mc.Source}
		byKey[k] = append(byKey[k], mc)
	}
	var out []chart
	for k, list := range byKey {
		out = append(out, layout(k[0], k[1], list, start))
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Scope < out[j].Scope || out[i].Scope == out[j].Scope && out[i].Source < out[j].Source
	})
	return out
}

func layout(scope, src string, list []store.MinuteCount, start time.Time) chart {
	ch := chart{Scope: scope, Source: src, Width: chartW, Height: chartH, Totals: store.MinuteCount{Scope: scope, Source: src}}
	for _, mc := range list {
		ch.Max = max(ch.Max, mc.Processed+mc.DeadLettered+mc.Drift)
		ch.Totals.Processed += mc.Processed
		ch.Totals.DeadLettered += mc.DeadLettered
		ch.Totals.Drift += mc.Drift
	}
	slot := float64(chartW) / minutes
	for _, mc := range list {
		i := int(mc.Minute.Sub(start) / time.Minute)
		if i < 0 || i >= minutes || ch.Max == 0 {
			continue
		}
		y := float64(chartH)
		for _, part := range []struct {
			class, label string
			n            int64
		}{{"processed", "processed", mc.Processed}, {"dead-lettered", "dead-lettered", mc.DeadLettered}, {"drift", "drift", mc.Drift}} {
			if part.n == 0 {
				continue
			}
			h := float64(part.n) / float64(ch.Max) * (chartH - 4)
			y -= h
			ch.Bars = append(ch.Bars, bar{Class: part.class, X: float64(i)*slot + 1, Y: y, W: slot - 2, H: h,
				Minute: mc.Minute, Count: part.n, OutcomeLabel: part.label})
		}
	}
	for i := 0; i <= minutes; i += 15 {
		ch.Ticks = append(ch.Ticks, tick{X: float64(i) * slot, Label: start.Add(time.Duration(i) * time.Minute).Format("15:04")})
	}
	return ch
}

// rateRow is the current rate of one scope and source.
type rateRow struct {
	Scope, Source string
	PerSecond     string
}

// rates are the processed messages per second over the last five minutes.
func rates(mcs []store.MinuteCount, t time.Time) []rateRow {
	from := t.Truncate(time.Minute).Add(-4 * time.Minute)
	secs := t.Sub(from).Seconds()
	sum := map[[2]string]int64{}
	for _, mc := range mcs {
		if !mc.Minute.Before(from) {
			sum[[2]string{mc.Scope, mc.Source}] += mc.Processed
		}
	}
	var out []rateRow
	for k, n := range sum {
		out = append(out, rateRow{Scope: k[0], Source: k[1], PerSecond: fmt.Sprintf("%.2f", float64(n)/secs)})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Scope < out[j].Scope || out[i].Scope == out[j].Scope && out[i].Source < out[j].Source
	})
	return out
}
