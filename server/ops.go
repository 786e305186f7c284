package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/source"
)

// Handler returns the operations handler: /healthz (200 "ok" while the
// process runs), /readyz (200 when the database answers, the server has
// started and every source that can tell is connected, else 503; a JSON
// object with one entry per check either way), /metrics (the registry)
// and Config.Handlers. Run serves it on Config.HTTPListen; serve it on a
// listener of your own otherwise.
func (s *Server) Handler() http.Handler { return s.handler }

// newHandler builds Handler; a pattern of Config.Handlers that is invalid
// or taken is an error, not the panic of http.ServeMux.
func (s *Server) newHandler() (h http.Handler, err error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n")) //nolint:errcheck // the client went away
	})
	mux.HandleFunc("GET /readyz", s.serveReady)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{}))
	for pattern, h := range s.cfg.Handlers {
		if err := mount(mux, pattern, h); err != nil {
			return nil, err
		}
	}
	if c := s.cfg.Console; c != nil {
		if err := s.consoleConfig().Validate(); err != nil { // checked now, built by Run
			return nil, fmt.Errorf("server: Config.Console: %w", err)
		}
		if err := mount(mux, cmp.Or(c.Prefix, "/ui/"), &s.console); err != nil {
			return nil, err
		}
	}
	return mux, nil
}

func mount(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	if h == nil {
		return fmt.Errorf("server: Config.Handlers[%q] is nil", pattern)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("server: Config.Handlers[%q]: %v", pattern, r)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks, ok := s.Ready(ctx)
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(checks) //nolint:errcheck // the client went away
}

// Ready runs the readiness checks of /readyz: "database" (Config.Ping),
// "started" ("starting: " and the start-up check in progress, such as the
// retention against a source, while Run checks), "durability" once
// checked (with Config.Durability), and one per source that is a
// source.Readier and per relay, by name. Each entry is "ok" or what is
// wrong; ok is whether all are. The "durability" entry never fails: it is
// "ok", or names the risks accepted at start (Config.AcceptDurabilityRisk)
// and what could not be read, while the server is ready.
func (s *Server) Ready(ctx context.Context) (checks map[string]string, ok bool) {
	checks, failing := s.readiness(ctx)
	return checks, len(failing) == 0
}

// readiness is Ready's checks and the names of those that fail.
func (s *Server) readiness(ctx context.Context) (checks map[string]string, failing map[string]bool) {
	cfg := s.Config()
	checks, failing = map[string]string{"started": "ok"}, map[string]bool{}
	set := func(name string, err error) {
		checks[name] = "ok"
		if err != nil {
			checks[name], failing[name] = err.Error(), true
		}
	}
	if state, checked := s.durabilityCheck(); checked {
		checks["durability"] = state
	}
	if cfg.Ping != nil {
		set("database", cfg.Ping(ctx))
	}
	if !s.ready.Load() {
		checks["started"], failing["started"] = "not started or stopping", true
		if step := s.starting.Load(); step != nil {
			checks["started"] = "starting: " + *step
		}
	}
	for _, src := range cfg.Sources {
		if rd, isReadier := src.Source.(source.Readier); isReadier {
			set(src.Name, rd.Ready(ctx))
		}
	}
	for _, r := range cfg.Relays {
		// Not ready while its claims or recordings fail: rows wait
		// although the rest of the server looks fine.
		set(r.Name, r.Relay.Health().Err())
	}
	return checks, failing
}

// startOps registers the collectors, builds the console and starts the
// operations listener; the returned function stops it.
func (s *Server) startOps() (func(), error) {
	if err := s.register(); err != nil {
		return nil, err
	}
	if err := s.startConsole(); err != nil {
		return nil, err
	}
	if s.cfg.HTTPListen == "" {
		return func() {}, nil
	}
	return s.serveOps()
}

// register adds txinbox_source_lag, txinbox_ready, the processors' metrics
// and the inbox gauges to the registry.
func (s *Server) register() error {
	cs := []prometheus.Collector{newLagCollector(s.cfg.Sources), newReadyCollector(s), newDurabilityCollector(s)}
	if err := s.cfg.Registry.Register(s.cfg.Metrics); err != nil {
		if _, already := err.(prometheus.AlreadyRegisteredError); !already {
			return err
		}
	}
	if s.cfg.Gauges != nil {
		// Rows past the longest retention wait for the purge whatever
		// their scope (the all-scope purge round uses it too).
		cs = append(cs, prom.NewInboxCollector(s.cfg.Gauges, prom.InboxOptions{Retention: s.longestRetention(), Logger: s.cfg.Logger}))
	}
	for _, c := range cs {
		if err := s.cfg.Registry.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// serveOps serves Handler on HTTPListen.
func (s *Server) serveOps() (func(), error) {
	ln, err := net.Listen("tcp", s.cfg.HTTPListen)
	if err != nil {
		return nil, fmt.Errorf("operations listener: %w", err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }() //nolint:errcheck // ErrServerClosed at shutdown
	paths := "/healthz, /readyz, /metrics"
	if c := s.cfg.Console; c != nil {
		paths += ", the console at " + cmp.Or(c.Prefix, "/ui/")
	}
	s.progress("health and metrics on http://%s (%s)", ln.Addr(), paths)
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx) //nolint:errcheck // best effort
		<-done
	}, nil
}

// startPurger runs the purger until the returned function stops it.
func (s *Server) startPurger(ctx context.Context) (func(), error) {
	cfg := *s.cfg.Purge
	if cfg.Retention == 0 {
		cfg.Retention = s.cfg.Retention.Keep
	}
	if cfg.Scope == "" && cfg.Scopes == nil {
		cfg.Scopes = s.PurgeScopes()
	}
	if cfg.OnBatch == nil {
		cfg.OnBatch = s.cfg.Metrics.OnPurgeBatch
	}
	if cfg.OnTableBatch == nil {
		cfg.OnTableBatch = s.cfg.Metrics.OnPurgeTable
	}
	if cfg.Logger == nil {
		cfg.Logger = s.cfg.Logger
	}
	pg, err := purge.New(s.cfg.Purger, cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); pg.Run(pctx) }() //nolint:errcheck // ends with ctx
	cfg = pg.Config()
	s.cfg.Logger.Info("txinbox: purger started", purgerAttrs(cfg)...)
	return func() { cancel(); <-done }, nil
}

// purgerAttrs are the purger's settings as log attributes, durations in
// txinbox's syntax (30d, 1m), an unset scope or scope list left out.
func purgerAttrs(cfg purge.Config) []any {
	attrs := []any{"retention", duration.Format(cfg.Retention), "interval", duration.Format(cfg.Interval)}
	if cfg.Scope != "" {
		attrs = append(attrs, "scope", cfg.Scope)
	}
	if len(cfg.Scopes) > 0 {
		scopes := make([]string, len(cfg.Scopes))
		for i, sr := range cfg.Scopes {
			scopes[i] = sr.Scope + "=" + duration.Format(sr.Retention)
		}
		attrs = append(attrs, "scopes", strings.Join(scopes, ","))
	}
	return attrs
}

// scopeRetentions are the scopes the server runs with their retentions,
// each scope once (with the longest retention of the sources that feed it).
func (s *Server) scopeRetentions() []purge.ScopeRetention {
	var out []purge.ScopeRetention
	at := map[string]int{}
	keep := func(scope string, r Retention) {
		d := r.or(s.cfg.Retention).Keep
		if i, ok := at[scope]; ok { // two sources of one scope: the longer retention covers both
			out[i].Retention = max(out[i].Retention, d)
			return
		}
		at[scope] = len(out)
		out = append(out, purge.ScopeRetention{Scope: scope, Retention: d})
	}
	for _, e := range s.cfg.Endpoints {
		if len(e.Scopes) == 0 {
			keep(e.Scope, e.Retention)
		}
		for _, scope := range e.Scopes {
			keep(scope, e.Retention)
		}
	}
	for _, src := range s.cfg.Sources {
		keep(src.Scope, src.Retention)
	}
	return out
}

// PurgeScopes are the purger's per-scope retentions: none when every scope
// keeps Config.Retention (one all-scope pass), else every scope the server
// runs.
func (s *Server) PurgeScopes() []purge.ScopeRetention {
	all := s.scopeRetentions()
	for _, sr := range all {
		if sr.Retention != s.cfg.Retention.Keep {
			return all
		}
	}
	return nil
}

func (s *Server) longestRetention() time.Duration {
	longest := s.cfg.Retention.Keep
	for _, sr := range s.scopeRetentions() {
		longest = max(longest, sr.Retention)
	}
	return longest
}

// lagCollector exports txinbox_source_lag{scope,source,partition}: the
// messages a source has not delivered or committed yet, read from the
// broker at each scrape by each source that is a source.Lagger; source is
// the source's Name.
type lagCollector struct {
	desc *prometheus.Desc
	srcs []Source
}

func newLagCollector(srcs []Source) lagCollector {
	return lagCollector{srcs: srcs, desc: prometheus.NewDesc("txinbox_source_lag",
		"Messages waiting in the source (Kafka: per partition, end offset minus committed offset).",
		[]string{"scope", "source", "partition"}, nil)}
}

// Describe implements prometheus.Collector.
func (c lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector; a source that does not answer
// within 2s is left out of this scrape.
func (c lagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.srcs {
		l, ok := s.Source.(source.Lagger)
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		lags, err := l.Lag(ctx)
		cancel()
		if err != nil {
			continue
		}
		for _, lag := range lags {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(lag.Messages), s.Scope, s.Name, lag.Partition)
		}
	}
}
