package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/purger"
	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/store"
)

// serveOps are the operational parts of serve: health, readiness and
// metrics on --http-listen, logs, and the background purger.
type serveOps struct {
	HTTPListen    string
	log           logFlags // --log-format, --log-level
	Retention     string
	PurgeInterval time.Duration
	NoPurge       bool
	// RetryWindow is how long senders may resend a message (the AS4
	// partners' retry window); the retention must cover it.
	RetryWindow string
	// AcceptShortRetention accepts a retention shorter than RetryWindow.
	AcceptShortRetention bool

	retention   time.Duration
	retryWindow time.Duration
	// checks are the readiness checks of /readyz besides the database,
	// by name; set before start.
	checks map[string]func(context.Context) error
	// alsoPurge, if set, purges tables outside the inbox (the AS4
	// messages) with the same retention, batch by batch.
	alsoPurge func(ctx context.Context, before time.Time, limit int) (int64, error)
	metrics   *prom.Metrics
	registry  *prometheus.Registry
	traces    serveTraces
	// hooks are every processor's hooks: the metrics, and the tracer
	// when --otel-traces is on (set by serveWith).
	hooks []txinbox.Hook
	// scopes are the scopes serve runs with their retentions (set by
	// serveWith before start).
	scopes []scopeRetention
	ready  *atomic.Bool // set in setup: the options struct is copied by value before
}

func (o *serveOps) register(fs *flag.FlagSet) {
	fs.StringVar(&o.HTTPListen, "http-listen", "", "address for /healthz, /readyz and /metrics (default: none)")
	o.log.register(fs)
	fs.StringVar(&o.Retention, "retention", "30d", "keep inbox rows this long; the purger deletes older ones (e.g. 30d, 720h)")
	durationFlag(fs, &o.PurgeInterval, "purge-interval", time.Minute, false, "pause between purge rounds")
	fs.BoolVar(&o.NoPurge, "no-purge", false, "do not run the background purger (run txinbox purge yourself)")
	fs.StringVar(&o.RetryWindow, "retry-window", "7d", "how long senders (AS4 partners, and RabbitMQ and NATS producers unless set apart) may resend a message; --retention must be at least this")
	fs.BoolVar(&o.AcceptShortRetention, "accept-short-retention", false,
		"start although --retention is shorter than a retry window or a broker's retention (a message delivered again after the retention is processed again); logged at start")
	o.traces.register(fs)
}

func (o *serveOps) validate() error {
	d, err := parseRetention(o.Retention)
	if err != nil {
		return fmt.Errorf("--retention: %w", err)
	}
	o.retention = d
	if o.retryWindow, err = parseRetention(o.RetryWindow); err != nil {
		return fmt.Errorf("--retry-window: %w", err)
	}
	if err := o.log.validate(); err != nil {
		return err
	}
	if o.PurgeInterval <= 0 {
		return fmt.Errorf("--purge-interval must be positive")
	}
	return o.traces.validate()
}

// horizon is how long a source can deliver a message again: a broker's
// retention read from it, or a sender's retry window from configuration.
type horizon struct {
	// retention is the retention of the source's scope (zero: --retention).
	retention retention
	source    string        // e.g. `Kafka topic "invoices"`
	figure    string        // e.g. "retention.ms=604800000 (7d)", "--retry-window 7d"
	d         time.Duration // the horizon, unless forever
	forever   bool          // the broker keeps messages for ever
}

// checkRetention refuses a --retention shorter than any source's horizon,
// naming both figures, unless --accept-short-retention is given; then it
// logs each accepted shortfall. A source that keeps messages for ever is
// never covered.
func (o *serveOps) checkRetention(logger *slog.Logger, hs []horizon) error {
	var errs []error
	for _, h := range hs {
		r := h.retention
		if r.d == 0 {
			r = o.defaultRetention()
		}
		var msg string
		switch {
		case h.forever:
			msg = fmt.Sprintf("%s keeps messages for ever (%s): no retention covers it (%s); a message delivered "+
				"again after that would be processed again", h.source, h.figure, r.figure)
		case r.d < h.d:
			msg = fmt.Sprintf("%s is shorter than %s of %s: a message delivered again after %s would be processed again",
				r.figure, h.figure, h.source, formatDays(r.d))
		default:
			continue
		}
		if o.AcceptShortRetention {
			logger.Warn("txinbox: retention shorter than a source can deliver again, accepted by --accept-short-retention",
				"retention", r.figure, "source", h.source, "horizon", h.figure)
			continue
		}
		errs = append(errs, errors.New(msg))
	}
	if len(errs) > 0 {
		errs = append(errs, errors.New("raise the retention, or pass --accept-short-retention to accept it"))
	}
	return errors.Join(errs...)
}

// defaultRetention is --retention.
func (o *serveOps) defaultRetention() retention {
	return retention{d: o.retention, figure: "--retention " + o.Retention}
}

// scopeRetention is a scope serve runs and its retention.
type scopeRetention struct {
	scope     string
	retention retention
}

// purgeScopes are the purger's per-scope retentions: none when every
// scope keeps the default, else every scope serve runs.
func (o *serveOps) purgeScopes() []purger.ScopeRetention {
	var out []purger.ScopeRetention
	differ := false
	for _, s := range o.scopes {
		differ = differ || s.retention.d != o.retention
		out = append(out, purger.ScopeRetention{Scope: s.scope, Retention: s.retention.d})
	}
	if !differ {
		return nil
	}
	return out
}

// formatDays writes d in days when it is whole days, else as a duration.
func formatDays(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

func (o *serveOps) logger(w io.Writer) *slog.Logger {
	l, _ := o.log.newLogger(w) // validated
	return l
}

// setup creates the metrics that the processor's hooks feed.
func (o *serveOps) setup() {
	o.ready = new(atomic.Bool)
	o.metrics = prom.New(prom.Options{})
	o.registry = prometheus.NewRegistry()
	o.registry.MustRegister(o.metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// start runs the ops HTTP server and the purger until ctx is done; the
// returned function waits for both to stop.
func (o *serveOps) start(ctx context.Context, env *Env, logger *slog.Logger, db *inboxDB) (func(), error) {
	var stops []func()
	if gr, ok := db.admin.(store.GaugeReader); ok {
		// Rows past the longest retention wait for the purge whatever
		// their scope (the all-scope purge round uses it too).
		longest := o.retention
		for _, s := range o.scopes {
			longest = max(longest, s.retention.d)
		}
		if err := o.registry.Register(prom.NewInboxCollector(gr, prom.InboxOptions{Retention: longest, Logger: logger})); err != nil {
			return nil, err
		}
	}
	if o.HTTPListen != "" {
		ln, err := net.Listen("tcp", o.HTTPListen)
		if err != nil {
			return nil, fmt.Errorf("--http-listen: %w", err)
		}
		srv := &http.Server{Handler: o.mux(db), ReadHeaderTimeout: 10 * time.Second}
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ln) }() //nolint:errcheck // ErrServerClosed at shutdown
		fmt.Fprintf(env.Stdout, "health and metrics on http://%s (/healthz, /readyz, /metrics)\n", ln.Addr())
		stops = append(stops, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(sctx) //nolint:errcheck // best effort
			<-done
		})
	}
	if !o.NoPurge {
		pg, err := purger.New(purgeAlso{db.admin.(store.Purger), o.alsoPurge}, purger.Config{Retention: o.retention, Scopes: o.purgeScopes(), Interval: o.PurgeInterval,
			Logger: logger, OnBatch: o.metrics.OnPurgeBatch})
		if err != nil {
			return nil, err
		}
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); pg.Run(pctx) }() //nolint:errcheck // ends with ctx
		logger.Info("txinbox: purger started", "retention", o.retention.String(), "interval", o.PurgeInterval.String(),
			"scopes", fmt.Sprint(o.purgeScopes()))
		stops = append(stops, func() { cancel(); <-done })
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}, nil
}

func (o *serveOps) mux(db *inboxDB) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n")) //nolint:errcheck // the client went away
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		checks := map[string]string{"database": "ok", "started": "ok"}
		status := http.StatusOK
		if err := db.ping(ctx); err != nil {
			checks["database"], status = err.Error(), http.StatusServiceUnavailable
		}
		if !o.ready.Load() {
			checks["started"], status = "not started or stopping", http.StatusServiceUnavailable
		}
		for name, check := range o.checks {
			checks[name] = "ok"
			if err := check(ctx); err != nil {
				checks[name], status = err.Error(), http.StatusServiceUnavailable
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(checks) //nolint:errcheck // the client went away
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.registry, promhttp.HandlerOpts{}))
	return mux
}

// purgeAlso purges the inbox, then, with the same cutoff and limit, the
// tables of also.
type purgeAlso struct {
	store.Purger
	also func(ctx context.Context, before time.Time, limit int) (int64, error)
}

// PurgeBatch purges one batch of each.
func (p purgeAlso) PurgeBatch(ctx context.Context, req store.PurgeRequest) (store.PurgeResult, error) {
	res, err := p.Purger.PurgeBatch(ctx, req)
	if err != nil || req.DryRun || p.also == nil {
		return res, err
	}
	res.Other, err = p.also(ctx, req.Before, req.Limit)
	return res, err
}
