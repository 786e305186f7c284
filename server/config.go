package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
)

// Config configures a Server. Every field is optional but one: at least
// one source, endpoint or relay, given here or added with Server.Add and
// Server.AddEndpoint before Run.
type Config struct {
	// Sources are the broker sources, each with its own processor and
	// scope over the one inbox. More can be added with Server.Add (a
	// source built with Server.Hooks in its processor is added so).
	// Defaults to none.
	Sources []Source
	// Endpoints are the HTTP endpoints that receive messages (the AS4
	// endpoint), each on a listener of its own. Defaults to none.
	Endpoints []Endpoint
	// Relays are outbox relays run beside the sources; they stop with
	// them (sends in flight finish and are recorded). Defaults to none.
	Relays []Relay

	// Ping checks the inbox database for /readyz (check "database").
	// Defaults to none: /readyz has no database check.
	Ping func(ctx context.Context) error
	// Gauges, if set, feeds the txinbox_inbox_* gauges (rows, expired
	// rows, oldest row and purge lag); *pgstore.Driver and
	// *sqlitestore.Driver are GaugeReaders. Defaults to none.
	Gauges store.GaugeReader

	// Durability, if set, is read at start (Server.CheckDurability): a
	// setting that can lose acknowledged messages (fsync=off,
	// synchronous_commit=off, asynchronous replication, ...) stops Run
	// with a *DurabilityError unless AcceptDurabilityRisk; /readyz, the
	// txinbox_durability_risk metric and the console show what was read.
	// *pgstore.Driver, *pgdbstore.Driver, *mysqlstore.Driver and
	// *sqlitestore.Driver are DurabilityReaders.
	// Defaults to none: nothing is checked.
	Durability store.DurabilityReader
	// AcceptDurabilityRisk starts the server although a setting of the
	// database can lose acknowledged messages; each is logged as a
	// warning and named in /readyz. Defaults to false: Run refuses with a
	// *DurabilityError.
	AcceptDurabilityRisk bool
	// AcceptDurabilityRiskName names AcceptDurabilityRisk in the
	// durability check's messages ("--accept-durability-risk" for txinbox
	// serve). Defaults to "Config.AcceptDurabilityRisk".
	AcceptDurabilityRiskName string

	// Retention is how long the inbox rows of a scope without a retention
	// of its own are kept: the retention check compares it with what each
	// source can deliver again, and the purger deletes older rows.
	// Defaults to DefaultRetention.
	Retention Retention
	// AcceptShortRetention starts the server although a retention is
	// shorter than a source's redelivery horizon (a message delivered
	// again after it is processed again); each shortfall is logged as a
	// warning. Defaults to false: Run refuses with a *RetentionError.
	AcceptShortRetention bool
	// AcceptShortRetentionName names AcceptShortRetention in the retention
	// check's messages ("--accept-short-retention" for txinbox serve).
	// Defaults to "Config.AcceptShortRetention".
	AcceptShortRetentionName string
	// Purge, if set, runs a background purger over Purger until the
	// server stops. Its Retention and Scopes default to the server's
	// (every scope with its own retention when they differ), its OnBatch
	// and OnTableBatch to the server's metrics, its Logger to Logger.
	// Defaults to nil: no purger.
	Purge *purge.Config
	// Purger is the store the purger purges (the inbox's driver).
	// Required with Purge.
	Purger store.Purger

	// HTTPListen is the address of the operations listener: /healthz,
	// /readyz, /metrics and Handlers. Defaults to "": none (Handler
	// serves the same for a listener of the caller's).
	HTTPListen string
	// Handlers are mounted on the operations listener besides /healthz,
	// /readyz and /metrics, by http.ServeMux pattern (a web console at
	// "/ui/", say). Defaults to none.
	Handlers map[string]http.Handler
	// Console, if set, serves the operator's web console (package
	// console) on the operations listener at its Prefix ("/ui/" by
	// default). Where its Sources, Scopes, Durability, Gatherer and Logger
	// are empty the server fills them with its own sources (readiness and
	// lag), its scopes and their retentions, Config.Durability, Registry
	// and Logger. Its Admin is
	// required. Defaults to nil: no console.
	Console *console.Config
	// Logger gets the server's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// Progress, if set, gets one line per step of the start and the stop
	// ("kafka source running, scope kafka", "ready: as4, kafka",
	// "stopped"), as txinbox serve prints them. Defaults to none: they
	// go to Logger.
	Progress io.Writer
	// Registry is where the server registers its metrics (the
	// processors', txinbox_source_lag and the inbox gauges); /metrics
	// serves it. Defaults to a new registry with the Go and process
	// collectors.
	Registry *prometheus.Registry
	// Metrics are the processors' metrics (through Hooks) and the purge's.
	// Defaults to prom.New(prom.Options{}).
	Metrics *prom.Metrics
	// TracerProvider, if set, traces each batch transaction of the
	// processors given Hooks (package metrics/otel). Defaults to none.
	TracerProvider trace.TracerProvider
	// ShutdownTimeout is how long a stop waits for requests and batches in
	// flight before it cuts them (nothing of them is acked). Defaults to
	// 30s.
	ShutdownTimeout time.Duration
	// HorizonTimeout bounds reading one source's redelivery horizons at
	// start. Defaults to 30s.
	HorizonTimeout time.Duration
}

// Source is one broker source the server runs.
type Source struct {
	// Name names the source in logs, in /readyz and in the source label
	// of txinbox_source_lag, e.g. "kafka" or "orders". Required and
	// unique among the server's sources, endpoints and relays.
	Name string
	// Scope is the inbox scope its processor writes: the scope label of
	// txinbox_source_lag and, with a Retention of its own, the purger's
	// per-scope pass. Required.
	Scope string
	// Source runs the source. If it is a source.Readier, /readyz asks it;
	// a source.Lagger, txinbox_source_lag reads it at each scrape; a
	// source.Horizoner, the retention check reads its horizons at start.
	// Required.
	Source source.Source
	// RetryWindow is how long the producers may send a message again (a
	// RabbitMQ or NATS producer's retry window): the retention check
	// compares it with the scope's retention beside the broker's own
	// horizons (source.Horizoner). Defaults to none: only the broker's.
	RetryWindow source.Horizon
	// Retention is the scope's own retention. Defaults to
	// Config.Retention.
	Retention Retention
}

// Endpoint is an HTTP endpoint that receives messages (the AS4 endpoint,
// as4.Handler): it is served on its own listener until the stop, then
// answers the requests in flight within the shutdown timeout.
type Endpoint struct {
	// Name names the endpoint in logs and progress lines, e.g. "as4".
	// Required.
	Name string
	// Listen is the address of its listener, e.g. ":8080". Required.
	Listen string
	// Path is where Handler is mounted. Defaults to "/" + Name.
	Path string
	// Handler answers the requests. Build its processor with
	// Server.RequestHooks. Required.
	Handler http.Handler
	// Scope is the inbox scope its processor writes. Defaults to Name.
	Scope string
	// Scopes are the inbox scopes it writes when it writes more than one
	// (an HTTP inbox's routes, each in a scope of its own, e.g.
	// "ingest:github"): each is purged at Retention. Set, it replaces
	// Scope there.
	Scopes []string
	// RetryWindow is how long senders may send a message again (the AS4
	// partners' retry window): the retention check's horizon of the
	// endpoint. Defaults to none: not checked.
	RetryWindow source.Horizon
	// Retention is the scope's own retention. Defaults to
	// Config.Retention.
	Retention Retention
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// the http.Server's. Default to 10s, 5m, 6m and 2m.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Front are the limits of the hardened front every endpoint has: it
	// reads a request's body whole before Handler runs (so a slow client
	// holds none of the handler's slots), cuts bodies slower than a
	// minimum rate, and bounds the requests of one client and the body
	// bytes of all. Its refusals are written by Handler's Refuse method
	// when it has one (as4.Handler has), else as text/plain.
	Front Front
}

// Front are the limits of an endpoint's hardened front (docs/http.md).
type Front struct {
	// MaxBodyBytes is the largest request body read (larger: 413).
	// Defaults to 50 MiB.
	MaxBodyBytes int64
	// MinBodyRate is the slowest a body may arrive after BodyGrace, in
	// bytes a second on average (slower: 408, connection closed).
	// Defaults to 16 KiB/s; negative: no minimum.
	MinBodyRate int64
	// BodyGrace is how long a body may take before MinBodyRate applies.
	// Defaults to 10s.
	BodyGrace time.Duration
	// MaxPerClient is how many requests one client (IP address) may have
	// being read or answered at once (more: 429). Defaults to 16.
	MaxPerClient int
	// MaxBodyBytesInFlight bounds the bytes of the bodies being read or
	// answered, counted as they arrive (more: 503). Defaults to 256 MiB.
	MaxBodyBytesInFlight int64
}

// Relay is an outbox relay the server runs beside the sources.
type Relay struct {
	// Name names the relay in /readyz and logs. Defaults to "outbox
	// relay".
	Name string
	// Relay is the relay; /readyz reports its Health. Required.
	Relay *outbox.Relay
}

// DefaultRetention is Config.Retention's default, 30 days: txinbox serve's
// --retention default too.
const DefaultRetention = 30 * duration.Day

// Retention is how long a scope's inbox rows are kept, and where that was
// configured.
type Retention struct {
	// Keep is the retention. Zero: the default (Config.Retention for a
	// source, DefaultRetention for Config.Retention).
	Keep time.Duration
	// Setting names where Keep was set, for the retention check's
	// messages, e.g. "--kafka-retention 60d". Defaults to "retention"
	// and Keep in days, e.g. "retention 30d".
	Setting string
}

func (r Retention) or(def Retention) Retention {
	if r.Keep == 0 {
		return def
	}
	if r.Setting == "" {
		r.Setting = "retention " + duration.Format(r.Keep)
	}
	return r
}

func (c Config) withDefaults() Config {
	c.Retention = c.Retention.or(Retention{Keep: DefaultRetention, Setting: "retention " + duration.Format(DefaultRetention)})
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = prom.New(prom.Options{})
	}
	if c.Registry == nil {
		c.Registry = newRegistry()
	}
	if c.AcceptDurabilityRiskName == "" {
		c.AcceptDurabilityRiskName = "Config.AcceptDurabilityRisk"
	}
	if c.AcceptShortRetentionName == "" {
		c.AcceptShortRetentionName = "Config.AcceptShortRetention"
	}
	defDuration(&c.ShutdownTimeout, 30*time.Second)
	defDuration(&c.HorizonTimeout, 30*time.Second)
	c.Endpoints = append([]Endpoint(nil), c.Endpoints...)
	for i := range c.Endpoints {
		c.Endpoints[i] = c.Endpoints[i].withDefaults()
	}
	c.Relays = append([]Relay(nil), c.Relays...)
	for i := range c.Relays {
		if c.Relays[i].Name == "" {
			c.Relays[i].Name = "outbox relay"
		}
	}
	c.Sources = append([]Source(nil), c.Sources...)
	return c
}

func (e Endpoint) withDefaults() Endpoint {
	if e.Path == "" {
		e.Path = "/" + e.Name
	}
	if e.Scope == "" {
		e.Scope = e.Name
	}
	defDuration(&e.ReadHeaderTimeout, 10*time.Second)
	defDuration(&e.ReadTimeout, 5*time.Minute)
	defDuration(&e.WriteTimeout, 6*time.Minute)
	defDuration(&e.IdleTimeout, 2*time.Minute)
	return e
}

func defDuration(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func (c Config) validate() error {
	switch {
	case c.Retention.Keep < 0:
		return errors.New("server: Config.Retention must not be negative")
	case c.ShutdownTimeout < 0 || c.HorizonTimeout < 0:
		return errors.New("server: Config.ShutdownTimeout and HorizonTimeout must not be negative")
	case c.Purge != nil && c.Purger == nil:
		return errors.New("server: Config.Purge needs Config.Purger (the inbox's driver)")
	}
	names := map[string]bool{}
	for i, e := range c.Endpoints {
		if err := e.validate(); err != nil {
			return fmt.Errorf("server: Config.Endpoints[%d]: %w", i, err)
		}
		if err := unique(names, e.Name); err != nil {
			return err
		}
	}
	for i, r := range c.Relays {
		if r.Relay == nil {
			return fmt.Errorf("server: Config.Relays[%d] (%s): Relay is nil", i, r.Name)
		}
		if err := unique(names, r.Name); err != nil {
			return err
		}
	}
	for i, s := range c.Sources {
		if err := s.validate(); err != nil {
			return fmt.Errorf("server: Config.Sources[%d]: %w", i, err)
		}
		if err := unique(names, s.Name); err != nil {
			return err
		}
	}
	return nil
}

func unique(names map[string]bool, name string) error {
	if names[name] {
		return fmt.Errorf("server: two sources, endpoints or relays are named %q", name)
	}
	names[name] = true
	return nil
}

func (s Source) validate() error {
	switch {
	case s.Name == "":
		return errors.New("a name is required (Name)")
	case s.Scope == "":
		return fmt.Errorf("source %s: Scope is required", s.Name)
	case s.Source == nil:
		return fmt.Errorf("source %s: Source is nil", s.Name)
	case s.Retention.Keep < 0:
		return fmt.Errorf("source %s: Retention must not be negative", s.Name)
	}
	return nil
}

func (e Endpoint) validate() error {
	switch {
	case e.Name == "":
		return errors.New("a name is required (Name)")
	case e.Listen == "" || e.Handler == nil:
		return fmt.Errorf("endpoint %s: Listen and Handler are required", e.Name)
	case e.Retention.Keep < 0:
		return fmt.Errorf("endpoint %s: Retention must not be negative", e.Name)
	}
	if err := e.front().Validate(); err != nil {
		return fmt.Errorf("endpoint %s: Front: %w", e.Name, err)
	}
	return nil
}
