package console

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/store"
)

// httpKeyRow is one HTTP key of the page: its inbox row and the stored
// answer's status and size (Status 0: not an httpinbox answer).
type httpKeyRow struct {
	Route, Scope, MessageID string
	ReceivedAt              time.Time
	Status, BodyBytes       int
}

// httpRoute is one route's keys on the page, with this process's
// request counts by event (Config.Gatherer's
// txinbox_http_requests_total): replays, conflicts, mismatches.
type httpRoute struct {
	Route  string
	Keys   []httpKeyRow
	Events map[string]float64
}

type httpKeysData struct {
	Routes      []*httpRoute
	Limit       int
	HasCounters bool
}

// httpKeys lists the newest HTTP keys (pageSize of them, of every
// route), grouped by route with their stored status, and this process's
// replay, conflict and mismatch counts.
func (c *console) httpKeys(w http.ResponseWriter, r *http.Request) {
	l, ok := c.cfg.Admin.(store.ReplyLister)
	if !ok {
		c.showResult(w, r, http.StatusNotFound, result{Message: "this store cannot list HTTP keys (store.ReplyLister)", Back: c.cfg.Prefix})
		return
	}
	// Every scope: an HTTP inbox's scope is its Config.Scope (httpinbox's
	// "http", serve's ingress "ingest", or the application's own), ":" and
	// the route, and only its rows hold replies.
	recs, err := l.ListReplies(r.Context(), "", pageSize)
	if err != nil {
		c.failed(w, r, "listing the HTTP keys", err)
		return
	}
	d := httpKeysData{Limit: pageSize}
	byRoute := map[string]*httpRoute{}
	route := func(name string) *httpRoute {
		if byRoute[name] == nil {
			byRoute[name] = &httpRoute{Route: name, Events: map[string]float64{}}
			d.Routes = append(d.Routes, byRoute[name])
		}
		return byRoute[name]
	}
	for _, rec := range recs {
		name := rec.Scope
		if _, route, ok := strings.Cut(rec.Scope, ":"); ok {
			name = route
		}
		row := httpKeyRow{Route: name, Scope: rec.Scope, MessageID: rec.MessageID, ReceivedAt: rec.ReceivedAt}
		if rs, err := httpinbox.ParseStoredResponse(rec.Reply); err == nil {
			row.Status, row.BodyBytes = rs.Status, len(rs.Body)
		}
		rt := route(name)
		rt.Keys = append(rt.Keys, row)
	}
	if c.cfg.Gatherer != nil {
		d.HasCounters = gatherHTTPEvents(c.cfg.Gatherer, route) == nil
	}
	slices.SortFunc(d.Routes, func(a, b *httpRoute) int { return strings.Compare(a.Route, b.Route) })
	c.render(w, r, "httpkeys", "HTTP keys", d)
}

// gatherHTTPEvents adds the counts of txinbox_http_requests_total (any
// namespace's ..._http_requests_total) to each route's events.
func gatherHTTPEvents(g prometheus.Gatherer, route func(string) *httpRoute) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		if !strings.HasSuffix(mf.GetName(), "_http_requests_total") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var name, event string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "route":
					name = l.GetValue()
				case "event":
					event = l.GetValue()
				}
			}
			if name == "" || event == "" {
				continue // another library's ..._http_requests_total, not httpinbox's
			}
			route(name).Events[event] += m.GetCounter().GetValue()
		}
	}
	return nil
}
