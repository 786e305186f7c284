package console

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/store"
)

// scopeRow is one scope's line on the overview.
type scopeRow struct {
	store.ScopeStats
	Retention time.Duration // 0: not configured, no purge figures
	// OldestAge is the age of the oldest inbox row; Overdue how long it
	// has waited for the purge (0: nothing waits).
	OldestAge, Overdue time.Duration
}

// sourceRow is one source's line on the overview.
type sourceRow struct {
	Source
	Ready    string // "ready", the reason it is not, or "unknown"
	IsReady  bool
	Lag      int64
	LagKnown bool
	LagErr   string
}

type overviewData struct {
	Scopes    []scopeRow
	Sources   []sourceRow
	Charts    []chart
	Rates     []rateRow
	Counters  []counterRow
	Outbox    *outbox.Stats
	OutboxAge time.Duration
	// Durability is what Config.Durability read, nil without it.
	Durability *store.Durability
	Errors     []string
}

func (c *console) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var d overviewData
	fail := func(what string, err error) { d.Errors = append(d.Errors, what+": "+err.Error()) }
	if rows, err := c.scopeRows(ctx); err != nil {
		fail("scope figures", err)
	} else {
		d.Scopes = rows
	}
	if mcs, err := c.outcomes(ctx); err != nil {
		fail("outcomes of the last hour", err)
	} else {
		d.Charts, d.Rates = charts(mcs, now()), rates(mcs, now())
	}
	d.Sources = c.sourceRows(ctx)
	if c.cfg.Durability != nil {
		if du, err := c.cfg.Durability.Durability(ctx); err != nil {
			fail("durability settings", err)
		} else {
			d.Durability = &du
		}
	}
	if c.cfg.Gatherer != nil {
		if cs, err := gatherCounters(c.cfg.Gatherer); err != nil {
			fail("metrics", err)
		} else {
			d.Counters = cs
		}
	}
	if c.cfg.Outbox != nil {
		if s, err := c.cfg.Outbox.Stats(ctx); err != nil {
			fail("outbox", err)
		} else {
			d.Outbox = &s
			if !s.OldestUnsent.IsZero() {
				d.OutboxAge = now().Sub(s.OldestUnsent)
			}
		}
	}
	c.render(w, r, "overview", "Overview", d)
}

// scopeRows reads the per-scope counts, once per distinct retention (the
// expired count depends on the cutoff; every read lists every scope, so a
// scope of no known retention takes its figures from any).
func (c *console) scopeRows(ctx context.Context) ([]scopeRow, error) {
	retention := map[string]time.Duration{}
	cutoffs := map[time.Duration]bool{}
	for _, s := range c.cfg.Scopes {
		retention[s.Name] = s.Retention
		cutoffs[s.Retention] = true
	}
	if len(cutoffs) == 0 {
		cutoffs[0] = true
	}
	byCutoff := map[time.Duration]map[string]store.ScopeStats{}
	var all map[string]store.ScopeStats // any read: every scope
	t := now()
	for ret := range cutoffs {
		ss, err := c.cfg.Admin.ScopeStats(ctx, t.Add(-ret))
		if err != nil {
			return nil, err
		}
		all = map[string]store.ScopeStats{}
		for _, s := range ss {
			all[s.Scope] = s
		}
		byCutoff[ret] = all
	}
	var out []scopeRow
	for name, fig := range all {
		ret := retention[name]
		st, ok := byCutoff[ret][name]
		if !ok {
			st = fig
		}
		row := scopeRow{ScopeStats: st, Retention: ret}
		if ret == 0 {
			row.Expired = 0 // no retention known: nothing to call late
		}
		if !row.OldestInbox.IsZero() {
			row.OldestAge = t.Sub(row.OldestInbox)
			if ret > 0 && row.OldestAge > ret {
				row.Overdue = row.OldestAge - ret
			}
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scope < out[j].Scope })
	return out, nil
}

// sourceRows asks every source at once whether it is ready and how far
// it lags, each within two seconds, so a hung broker delays the page by
// two seconds at most.
func (c *console) sourceRows(ctx context.Context) []sourceRow {
	out := make([]sourceRow, len(c.cfg.Sources))
	var wg sync.WaitGroup
	for i, s := range c.cfg.Sources {
		wg.Go(func() { out[i] = askSource(ctx, s) })
	}
	wg.Wait()
	return out
}

func askSource(ctx context.Context, s Source) sourceRow {
	row := sourceRow{Source: s, Ready: "unknown"}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if s.Ready != nil {
		if err := s.Ready(ctx); err != nil {
			row.Ready = err.Error()
		} else {
			row.Ready, row.IsReady = "ready", true
		}
	}
	if s.Lag != nil {
		lags, err := s.Lag(ctx)
		if err != nil {
			row.LagErr = err.Error()
			return row
		}
		row.LagKnown = true
		for _, l := range lags {
			row.Lag += l.Messages
		}
	}
	return row
}
