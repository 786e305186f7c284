package serve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/store"
)

// serveOps are the operational parts of serve: health, readiness and
// metrics on --http-listen, logs, and the background purger.
type serveOps struct {
	HTTPListen    string
	log           clikit.LogFlags // --log-format, --log-level
	Retention     string
	PurgeInterval time.Duration
	NoPurge       bool
	// RetryWindow is how long senders may resend a message (the AS4
	// partners' retry window); the retention must cover it.
	RetryWindow string
	// AcceptShortRetention accepts a retention shorter than RetryWindow.
	AcceptShortRetention bool
	// AcceptDurabilityRisk starts although the database can lose
	// acknowledged messages (fsync=off, synchronous_commit=off,
	// asynchronous replication, ...).
	AcceptDurabilityRisk bool

	retention   time.Duration
	retryWindow time.Duration
	traces      serveTraces
	console     consoleFlags
}

func (o *serveOps) register(fs *flag.FlagSet) {
	fs.StringVar(&o.HTTPListen, "http-listen", "", "address for /healthz, /readyz and /metrics (default: none)")
	o.log.Register(fs)
	clikit.DurationTextFlag(fs, &o.Retention, "retention", duration.Format(server.DefaultRetention), "keep inbox rows this long; the purger deletes older ones (e.g. 30d, 720h)")
	clikit.DurationFlag(fs, &o.PurgeInterval, "purge-interval", time.Minute, false, "pause between purge rounds")
	fs.BoolVar(&o.NoPurge, "no-purge", false, "do not run the background purger (run txinbox purge yourself)")
	clikit.DurationTextFlag(fs, &o.RetryWindow, "retry-window", "7d", "how long senders (AS4 partners, and RabbitMQ and NATS producers unless set apart) may resend a message; --retention must be at least this")
	fs.BoolVar(&o.AcceptShortRetention, "accept-short-retention", false,
		"start although --retention is shorter than a retry window or a broker's retention (a message delivered again after the retention is processed again); logged at start")
	fs.BoolVar(&o.AcceptDurabilityRisk, "accept-durability-risk", false,
		"start although a database setting can lose acknowledged messages on a crash or a failover (fsync=off, synchronous_commit=off, "+
			"asynchronous standbys, SQLite synchronous=NORMAL); named in /readyz, txinbox_durability_risk and the console")
	o.traces.register(fs)
	o.console.register(fs)
}

func (o *serveOps) validate() error {
	d, err := clikit.ParseRetention(o.Retention)
	if err != nil {
		return fmt.Errorf("--retention: %w", err)
	}
	o.retention = d
	if o.retryWindow, err = clikit.ParseRetention(o.RetryWindow); err != nil {
		return fmt.Errorf("--retry-window: %w", err)
	}
	if err := o.log.Validate(); err != nil {
		return err
	}
	if o.PurgeInterval <= 0 {
		return fmt.Errorf("--purge-interval must be positive")
	}
	return o.traces.validate()
}

// defaultRetention is --retention.
func (o *serveOps) defaultRetention() server.Retention {
	return server.Retention{Keep: o.retention, Setting: "--retention " + o.Retention}
}

func (o *serveOps) logger(w io.Writer) *slog.Logger {
	l, _ := o.log.NewLogger(w) // validated
	return l
}

// serverConfig is the service of the options, without the AS4 endpoint
// and the broker sources (added to the server once it gives their
// processors its hooks): the ops listener, the retention, the purger
// (the AS4 messages and sent outbox rows with the inbox rows) and the
// relay, whose target closeRelay closes.
func (o *serveOptions) serverConfig(env *clikit.Env, db *clikit.InboxDB, logger *slog.Logger, tp trace.TracerProvider,
	as4Store any) (cfg server.Config, closeRelay func(), err error) {
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg = server.Config{Ping: db.Ping, Logger: logger, Registry: registry, TracerProvider: tp,
		HTTPListen: o.ops.HTTPListen, Retention: o.ops.defaultRetention(), ShutdownTimeout: o.ShutdownTimeout,
		AcceptShortRetention: o.ops.AcceptShortRetention, AcceptShortRetentionName: "--accept-short-retention",
		AcceptDurabilityRisk: o.ops.AcceptDurabilityRisk, AcceptDurabilityRiskName: "--accept-durability-risk (YAML accept_durability_risk: true)"}
	if dr, ok := db.Admin.(store.DurabilityReader); ok {
		cfg.Durability = dr
	}
	if o.ops.HTTPListen != "" {
		cfg.Console = o.ops.console.config(db, as4Store)
	}
	if gr, ok := db.Admin.(store.GaugeReader); ok {
		cfg.Gauges = gr
	}
	closeRelay = func() {}
	var tables []purge.Table
	if p, ok := as4Store.(interface {
		Purge(context.Context, time.Time, int) (int64, error)
	}); ok {
		tables = append(tables, purge.Table{Name: "as4_messages", Purge: p.Purge}) // AS4 messages expire with the inbox rows
	}
	if o.Relay.target != "" {
		var relay server.Relay
		if relay, closeRelay, err = newServeRelay(o, db, logger, registry); err != nil {
			return cfg, nil, err
		}
		cfg.Relays = []server.Relay{relay}
		tables = append(tables, purge.Table{Name: "outbox_sent", Purge: db.OutboxStore().PurgeSent})
	}
	if !o.ops.NoPurge {
		cfg.Purge = &purge.Config{Interval: o.ops.PurgeInterval, Tables: tables}
		cfg.Purger = db.Admin.(store.Purger)
	}
	return cfg, closeRelay, nil
}
