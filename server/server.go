// Package server is the service txinbox serve runs, for Go programs that
// run it themselves with handlers of their own: several broker sources
// over one inbox, an AS4 endpoint, outbox relays, the background purger,
// the retention check against each broker, /healthz, /readyz and
// /metrics, and the two-stage stop (stop fetching, commit and ack the
// batches in flight within a timeout, then cut them).
//
// A Server is built in two steps, because the processors of the sources
// need the server's hooks (the drain, the metrics, the traces):
//
//	srv, err := server.New(server.Config{HTTPListen: ":9090", Ping: pool.Ping, Gauges: driver})
//	proc, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{Scope: "orders",
//		Handler: handle, Hooks: srv.Hooks()})
//	src, err := kafka.New(...) // a source consuming into proc
//	srv.Add(server.Source{Name: "orders", Scope: "orders", Source: src})
//	err = srv.Run(ctx) // until ctx is done, then the drain
//
// Run compares each scope's retention with what its source can deliver
// again (while /healthz already answers and /readyz names the check)
// (source.Horizoner, Source.RetryWindow, Endpoint.RetryWindow) and refuses to
// start with a *RetentionError when a retention is shorter, unless
// Config.AcceptShortRetention. It then reads the database's durability
// settings (Config.Durability) and refuses with a *DurabilityError those
// that can lose acknowledged messages, unless Config.AcceptDurabilityRisk.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/httpfront"
	txotel "github.com/txinbox/txinbox/metrics/otel"
)

// Server runs sources, endpoints and relays over one inbox until stopped.
type Server struct {
	cfg Config
	// hard is cancelled when a stop's shutdown timeout passes: it cuts the
	// batch transactions still in flight (drainHook).
	hard    context.Context
	cutHard context.CancelFunc
	// inFlight counts the sources' batches in their transaction.
	inFlight *atomic.Int64
	// ready is true from the start of the sources to the stop.
	ready *atomic.Bool
	// starting names the start-up check in progress (the retention
	// against one source), for /readyz; nil when none is.
	starting atomic.Pointer[string]
	// durability is what CheckDurability read, nil before.
	durability atomic.Pointer[durabilityState]
	hooks      []txinbox.Hook
	handler    http.Handler
	console    lateHandler

	mu      sync.Mutex
	started bool
}

// New checks cfg and returns a Server; nothing runs or connects before
// Run.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, inFlight: new(atomic.Int64), ready: new(atomic.Bool)}
	s.hard, s.cutHard = context.WithCancel(context.Background())
	s.hooks = []txinbox.Hook{cfg.Metrics}
	if cfg.TracerProvider != nil {
		s.hooks = append(s.hooks, txotel.New(cfg.TracerProvider))
	}
	var err error
	if s.handler, err = s.newHandler(); err != nil {
		return nil, err
	}
	return s, nil
}

// newRegistry is the default registry: the Go and process collectors.
func newRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Hooks returns the hooks to put into the txinbox.Config.Hooks of each
// broker source's processor: the drain (a batch already in its
// transaction when the server stops commits and is acked, unless the
// shutdown timeout passes first), the metrics and, with a
// TracerProvider, the traces. Append hooks of your own after them.
func (s *Server) Hooks() []txinbox.Hook {
	return append([]txinbox.Hook{drainHook{s.hard, s.inFlight}}, s.hooks...)
}

// RequestHooks returns the hooks for the processor of an endpoint (the
// AS4 endpoint's Inbox config): the metrics and traces, without the
// drain, because a request's own context bounds its transaction and the
// stop drains the requests in flight.
func (s *Server) RequestHooks() []txinbox.Hook {
	return append([]txinbox.Hook(nil), s.hooks...)
}

// Metrics returns the registry the server's metrics are in, for metrics
// of the caller's own (the outbox relay's, say).
func (s *Server) Metrics() *prometheus.Registry { return s.cfg.Registry }

// Config returns the server's configuration with its defaults filled in
// and what was added.
func (s *Server) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Add adds sources before Run.
func (s *Server) Add(srcs ...Source) error {
	return s.add(func(c *Config) { c.Sources = append(c.Sources, srcs...) })
}

// AddEndpoint adds endpoints before Run.
func (s *Server) AddEndpoint(eps ...Endpoint) error {
	return s.add(func(c *Config) {
		for _, e := range eps {
			c.Endpoints = append(c.Endpoints, e.withDefaults())
		}
	})
}

// AddRelay adds outbox relays before Run.
func (s *Server) AddRelay(relays ...Relay) error {
	return s.add(func(c *Config) {
		for _, r := range relays {
			if r.Name == "" {
				r.Name = "outbox relay"
			}
			c.Relays = append(c.Relays, r)
		}
	})
}

func (s *Server) add(change func(*Config)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("server: add before Run")
	}
	c := s.cfg
	c.Sources, c.Endpoints, c.Relays = append([]Source(nil), c.Sources...), append([]Endpoint(nil), c.Endpoints...),
		append([]Relay(nil), c.Relays...)
	change(&c)
	if err := c.validate(); err != nil {
		return err
	}
	s.cfg = c
	return nil
}

// Run starts the operations listener (/healthz answers at once, /readyz
// names the start-up check in progress), checks the retention against the
// sources, starts the purger, and runs the sources, endpoints and relays
// until ctx is done or one fails; then it stops them: endpoints stop
// accepting and answer the requests in flight, the sources stop fetching
// and commit and ack the batches in flight, all within the shutdown
// timeout, after which what is left is cut (nothing of it acked). It
// returns nil after a clean stop; a *RetentionError when a retention is
// too short; a *DurabilityError when the database can lose acknowledged
// messages; the failure of a source (wrapped with its name); or a
// *CutError when batches or requests were cut; ErrStartCanceled (with
// ctx's error) when ctx ended during the start-up. A Server runs once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("server: Run called twice")
	}
	s.started = true
	s.mu.Unlock()
	defer s.cutHard()
	if len(s.cfg.Sources)+len(s.cfg.Endpoints)+len(s.cfg.Relays) == 0 {
		return errors.New("server: nothing to run: no source, endpoint or relay")
	}
	// The operations listener answers first: /healthz says alive and
	// /readyz names the check in progress while the retention is checked
	// (up to HorizonTimeout per source). The purger waits for the check:
	// it must not delete with a retention the check refuses.
	stopOps, err := s.startOps()
	if err != nil {
		return err
	}
	defer stopOps()
	if err := s.CheckRetention(ctx); err != nil {
		return startErr(ctx, err)
	}
	if err := s.CheckDurability(ctx); err != nil {
		return startErr(ctx, err)
	}
	if s.cfg.Purge != nil {
		stop, err := s.startPurger(ctx)
		if err != nil {
			return startErr(ctx, err)
		}
		defer stop()
	}
	eps, err := s.listen()
	if err != nil {
		return err
	}
	return s.run(ctx, eps)
}

// ErrStartCanceled is Run's error when its context ended during the
// start-up (the retention check, say): a stop asked for, not a failure.
// It comes with the context's error (errors.Is matches both).
var ErrStartCanceled = errors.New("server: stopped during start-up")

// startErr is err of a start-up step, ErrStartCanceled when ctx ended.
func startErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w: %w", ErrStartCanceled, ctx.Err())
	}
	return err
}

// listen opens the endpoints' listeners.
func (s *Server) listen() ([]*endpoint, error) {
	var out []*endpoint
	for _, e := range s.cfg.Endpoints {
		ln, err := net.Listen("tcp", e.Listen)
		if err != nil {
			for _, o := range out {
				o.ln.Close()
			}
			return nil, fmt.Errorf("%s endpoint: %w", e.Name, err)
		}
		mux := http.NewServeMux()
		mux.Handle(e.Path, httpfront.New(e.front(), e.Handler))
		out = append(out, &endpoint{Endpoint: e, ln: ln, srv: &http.Server{
			Handler: mux, ReadHeaderTimeout: e.ReadHeaderTimeout, ReadTimeout: e.ReadTimeout,
			WriteTimeout: e.WriteTimeout, IdleTimeout: e.IdleTimeout,
			ErrorLog: slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
		}})
	}
	return out, nil
}

// front is the configuration of e's hardened front.
func (e Endpoint) front() httpfront.Config {
	c := httpfront.Config{MaxBodyBytes: e.Front.MaxBodyBytes, MinBodyRate: e.Front.MinBodyRate, Grace: e.Front.BodyGrace,
		MaxPerClient: e.Front.MaxPerClient, MaxBodyBytesInFlight: e.Front.MaxBodyBytesInFlight}
	if r, ok := e.Handler.(interface {
		Refuse(http.ResponseWriter, *http.Request, int, string)
	}); ok {
		c.Refuse = r.Refuse
	}
	return c
}

// endpoint is an Endpoint with its listener and server.
type endpoint struct {
	Endpoint
	ln  net.Listener
	srv *http.Server
}

// progress writes one line of the start or the stop.
func (s *Server) progress(format string, args ...any) {
	if s.cfg.Progress != nil {
		fmt.Fprintf(s.cfg.Progress, format+"\n", args...)
		return
	}
	s.cfg.Logger.Info("txinbox: " + fmt.Sprintf(format, args...))
}
