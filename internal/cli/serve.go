package cli

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store"
)

func init() {
	register("serve", "run the sources (AS4, Kafka, RabbitMQ, SQS, NATS JetStream) until SIGTERM", runServe)
}

// serveOptions configures the serve command; each field is one flag.
type serveOptions struct {
	// db names the inbox database (--db, --schema, --table-prefix); the
	// inbox and AS4 tables are migrated at start. Required.
	db dbFlags
	// Scope is the inbox scope of AS4 messages. Defaults to "as4".
	Scope string
	// AS4Listen is the address of the AS4 endpoint, served at path /as4.
	// Defaults to "" (no AS4 endpoint); at least one source is required.
	AS4Listen string
	// AS4MaxBody is the largest AS4 request accepted, in bytes; larger
	// ones get 413. Defaults to 50 MiB.
	AS4MaxBody int64
	// AS4AcceptUnverifiedSecurity accepts messages whose wsse:Security is
	// marked mustUnderstand without verifying it (TLS or a gateway in
	// front does). Defaults to false: they are refused.
	AS4AcceptUnverifiedSecurity bool
	// AS4MaxConcurrent is how many AS4 requests are answered at once
	// (more get 503). Defaults to as4.DefaultMaxConcurrentRequests.
	AS4MaxConcurrent int
	// AS4MaxDecompressed is the most bytes a message's gzip payloads may
	// decompress to. Defaults to as4.DefaultMaxDecompressedBytes.
	AS4MaxDecompressed int64
	// AS4Agreements is a YAML file of partner agreements (P-Modes, see
	// as4.LoadAgreements). Defaults to none.
	AS4Agreements string
	// AS4Partner and AS4Self are the common case of one agreement, as
	// "type:id" or "id": the partner's From PartyId and ours (To); given
	// together, they add the agreement "as4-partner" with
	// AS4RequireSignature and AS4RequireCompression.
	AS4Partner, AS4Self                        string
	AS4RequireSignature, AS4RequireCompression bool
	// AS4Security is the endpoint's WS-Security (--as4-key, --as4-trust,
	// ...). With --as4-trust and without --as4-partner,
	// AS4RequireSignature requires a verified signature of every message.
	AS4Security serveSecurity
	// ReadHeaderTimeout bounds reading a request's headers. Defaults to 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included. Defaults
	// to 5m (50 MiB at about 170 KiB/s).
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer. Defaults to 6m.
	WriteTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long. Defaults
	// to 2m.
	IdleTimeout time.Duration
	// ShutdownTimeout is how long a stop waits for requests and broker
	// batches in flight before it cuts them (nothing of them is acked)
	// and exits 1. Defaults to 30s.
	ShutdownTimeout time.Duration
	// Effect is what runs for each new message in the inbox transaction:
	// none (the AS4 tables only), outbox or sql. Defaults to none.
	Effect string
	// EffectSQL are the statements of --effect sql.
	EffectSQL statements
	// AS4Retention keeps the AS4 scope's rows this long; empty: --retention.
	AS4Retention string
	as4Retention retention
	// Relay runs an outbox relay beside the sources: --relay-target and
	// the other relay-* flags, named as txinbox relay's.
	Relay relayFlags
	// ops: --http-listen, --log-format, --retention, --purge-interval,
	// --no-purge, --retry-window, --accept-short-retention.
	ops serveOps
	// sources: --kafka-*, --amqp-*, --sqs-*, --nats-*.
	sources sourceFlags
}

func (o serveOptions) withDefaults() serveOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.Scope == "" {
		o.Scope = as4.DefaultScope
	}
	if o.AS4MaxBody == 0 {
		o.AS4MaxBody = as4.DefaultMaxBodyBytes
	}
	def(&o.ReadHeaderTimeout, 10*time.Second)
	def(&o.ReadTimeout, 5*time.Minute)
	def(&o.WriteTimeout, 6*time.Minute)
	def(&o.IdleTimeout, 2*time.Minute)
	def(&o.ShutdownTimeout, 30*time.Second)
	return o
}

func (o serveOptions) validate() error {
	switch {
	case o.AS4Listen == "" && !o.sources.configured() && o.Relay.target == "":
		return errors.New("no source: give --as4-listen (an AS4 endpoint, e.g. :8080), --kafka-brokers, --amqp-url, " +
			"--sqs-queue-url or --nats-url (or --relay-target to run only the outbox relay)")
	case o.AS4MaxBody < 0:
		return errors.New("--as4-max-body must not be negative")
	case o.AS4MaxConcurrent < 0 || o.AS4MaxDecompressed < 0:
		return errors.New("--as4-max-concurrent and --as4-max-decompressed must not be negative")
	case (o.AS4Partner == "") != (o.AS4Self == ""):
		return errors.New("--as4-partner and --as4-self go together (the partner's PartyId and ours)")
	case o.AS4Partner == "" && o.AS4RequireCompression:
		return errors.New("--as4-require-compression needs --as4-partner and --as4-self (or put it in --as4-agreements)")
	case o.AS4Security.check() != nil:
		return o.AS4Security.check()
	case o.AS4RequireSignature && o.AS4Security.Trust == "":
		return errors.New("--as4-require-signature needs --as4-trust: only a verified signature counts")
	case o.ReadHeaderTimeout < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.IdleTimeout < 0 || o.ShutdownTimeout < 0:
		return errors.New("timeouts must not be negative")
	}
	return nil
}

func parseServeFlags(env *Env, args []string) (serveOptions, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var o serveOptions
	o.db.register(fs, env)
	fs.StringVar(&o.Scope, "scope", as4.DefaultScope, "inbox scope of the AS4 messages")
	fs.StringVar(&o.AS4Retention, "as4-retention", "", "keep the AS4 scope's inbox rows this long (default: --retention)")
	fs.StringVar(&o.AS4Listen, "as4-listen", "", "address of the AS4 endpoint (path /as4), e.g. :8080 (default: none)")
	int64Flag(fs, &o.AS4MaxBody, "as4-max-body", as4.DefaultMaxBodyBytes, 1, "largest AS4 request in bytes (larger: 413)")
	fs.BoolVar(&o.AS4AcceptUnverifiedSecurity, "as4-accept-unverified-security", false,
		"accept wsse:Security marked mustUnderstand without verifying it (only behind TLS client auth or a verifying gateway)")
	intFlag(fs, &o.AS4MaxConcurrent, "as4-max-concurrent", as4.DefaultMaxConcurrentRequests, 1, "AS4 requests answered at once (more: 503 with Retry-After)")
	int64Flag(fs, &o.AS4MaxDecompressed, "as4-max-decompressed", as4.DefaultMaxDecompressedBytes, 1, "most bytes a message's gzip payloads may decompress to (more: EBMS:0303)")
	fs.StringVar(&o.AS4Agreements, "as4-agreements", "", "YAML file of AS4 partner agreements (P-Modes); messages outside them get EBMS:0010 (default: accept any partner)")
	fs.StringVar(&o.AS4Partner, "as4-partner", "", "one agreement: the partner's From PartyId (type:id or id), with --as4-self")
	fs.StringVar(&o.AS4Self, "as4-self", "", "one agreement: our To PartyId (type:id or id), with --as4-partner")
	fs.BoolVar(&o.AS4RequireSignature, "as4-require-signature", false, "require signatures verified with --as4-trust: of the --as4-partner agreement, or without it of every message")
	o.AS4Security.register(fs, env)
	fs.BoolVar(&o.AS4RequireCompression, "as4-require-compression", false, "the --as4-partner agreement requires gzip-compressed payloads")
	durationFlag(fs, &o.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, false, "time allowed to read a request's headers")
	durationFlag(fs, &o.ReadTimeout, "read-timeout", 5*time.Minute, false, "time allowed to read a whole request")
	durationFlag(fs, &o.WriteTimeout, "write-timeout", 6*time.Minute, false, "time allowed from a request's headers to the end of its answer")
	durationFlag(fs, &o.IdleTimeout, "idle-timeout", 2*time.Minute, false, "keep-alive connections idle this long are closed")
	durationFlag(fs, &o.ShutdownTimeout, "shutdown-timeout", 30*time.Second, false, "time a stop waits for requests and batches in flight")
	o.ops.register(fs)
	o.Relay.register(fs, env, "relay-")
	o.sources.register(fs)
	fs.StringVar(&o.Effect, "effect", effectNone, "side effect per new message, in its transaction: none, outbox (payloads to the txinbox_outbox table) or sql")
	fs.Var(&o.EffectSQL, "effect-sql", "a statement for --effect sql (repeatable); parameters: "+sqlParams)
	config := fs.String("config", "", "read settings from this YAML `FILE` (keys are these flags' names; the environment's TXINBOX_* and the flags win)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := applyConfig(fs, env, *config); err != nil {
		return o, err
	}
	if err := o.ops.validate(); err != nil {
		return o, err
	}
	var err error
	if o.as4Retention, err = retentionOr("as4-retention", o.AS4Retention, o.ops.defaultRetention()); err != nil {
		return o, err
	}
	if err := o.sources.validate(o.ops.retryWindow, o.ops.defaultRetention()); err != nil {
		return o, err
	}
	if err := validateEffect(o.Effect, o.EffectSQL); err != nil {
		return o, err
	}
	o = o.withDefaults()
	return o, o.validate()
}

func runServe(ctx context.Context, env *Env, args []string) int {
	o, err := parseServeFlags(env, args)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(env.Stderr, "txinbox serve:", err)
		}
		return ExitUsage
	}
	db, err := openDB(ctx, o.db, 8)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve:", err)
		return ExitUsage
	}
	defer db.close()
	if err := db.admin.Migrate(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "txinbox serve: migrating %s: %v\n", db.where, err)
		return ExitFailure
	}
	if db.pg != nil {
		return serveWith[pgx.Tx](ctx, env, &o, db, db.pg, pgTxExec, func(ctx context.Context) (as4.Store[pgx.Tx], error) {
			st, err := as4pg.New(db.pg.Pool(), as4pg.Options{Schema: o.db.schema, TablePrefix: o.db.prefix})
			if err == nil {
				err = st.Migrate(ctx)
			}
			return st, err
		})
	}
	return serveWith[*sql.Tx](ctx, env, &o, db, db.lite, sqlTxExec, func(ctx context.Context) (as4.Store[*sql.Tx], error) {
		st, err := as4sqlite.New(db.lite.DB(), as4sqlite.Options{TablePrefix: o.db.prefix})
		if err == nil {
			err = st.Migrate(ctx)
		}
		return st, err
	})
}

// serveRun is what serveWith set up: the AS4 server, if any, and the
// broker sources.
type serveRun struct {
	env     *Env
	o       *serveOptions
	logger  *slog.Logger
	srv     *http.Server // nil without --as4-listen
	ln      net.Listener
	sources []*serveSource
	// cutBatches cancels the transactions of batches still in flight
	// (drainHook) when the shutdown timeout passes.
	cutBatches context.CancelFunc
	// inFlight counts the sources' batches in their transaction
	// (drainHook).
	inFlight *atomic.Int64
}

// serveWith sets up the AS4 endpoint and the broker sources, checks the
// retention against each, and runs them until ctx is done.
func serveWith[TTx any](ctx context.Context, env *Env, o *serveOptions, db *inboxDB, driver store.Driver[TTx],
	exec txExecFunc[TTx], newAS4 func(context.Context) (as4.Store[TTx], error)) int {
	fail := func(code int, err error) int {
		fmt.Fprintln(env.Stderr, "txinbox serve:", err)
		return code
	}
	if err := checkStatements(ctx, db, o.EffectSQL); err != nil {
		return fail(ExitUsage, err)
	}
	logger := o.ops.logger(env.Stderr)
	o.ops.setup()
	tracer, stopTraces, err := o.ops.traces.start(ctx, env.Stderr, logger)
	if err != nil {
		return fail(ExitUsage, err)
	}
	defer stopTraces() // after the sources stopped: their last spans are flushed
	o.ops.hooks = []txinbox.Hook{o.ops.metrics}
	if tracer != nil {
		o.ops.hooks = append(o.ops.hooks, tracer)
	}
	hard, cutBatches := context.WithCancel(context.WithoutCancel(ctx))
	defer cutBatches()
	r := &serveRun{env: env, o: o, logger: logger, cutBatches: cutBatches, inFlight: new(atomic.Int64)}
	var horizons []horizon
	if o.AS4Listen != "" {
		h, code, err := setupAS4(ctx, o, db, driver, exec, newAS4, logger)
		if err != nil {
			return fail(code, err)
		}
		defer h.Close() // after the server stopped: the batches in flight commit
		mux := http.NewServeMux()
		mux.Handle("/as4", h)
		r.srv = &http.Server{
			Handler: mux, ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout,
			WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout,
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}
		horizons = append(horizons, horizon{source: "the AS4 partners", d: o.ops.retryWindow, figure: "--retry-window " + o.ops.RetryWindow,
			retention: o.as4Retention})
		o.ops.scopes = append(o.ops.scopes, scopeRetention{o.Scope, o.as4Retention})
	}
	outboxHeaders := o.Effect == effectOutbox && outboxHasHeaders(ctx, db)
	joinEffect := effectJoinable(ctx, db)
	srcs, err := buildSources(&o.sources, sourceEnv[TTx]{driver: driver, logger: logger, getenv: env.Getenv,
		inbox: func(name, scope string) txinbox.Config[TTx] {
			return withSourceEffect(txinbox.Config[TTx]{Scope: scope, Logger: logger, Hooks: append([]txinbox.Hook{drainHook{hard, r.inFlight}}, o.ops.hooks...)},
				o.Effect, o.EffectSQL, db.outboxTable(), outboxHeaders, joinEffect, exec, name)
		}})
	if err != nil {
		return fail(ExitUsage, err)
	}
	r.sources = srcs
	defer func() {
		for _, s := range srcs {
			s.close()
		}
	}()
	for _, s := range srcs {
		hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		hs, err := s.horizons(hctx)
		cancel()
		if err != nil {
			return fail(ExitFailure, fmt.Errorf("checking the retention against the %s source: %w", s.name, err))
		}
		for i := range hs {
			hs[i].retention = o.sources.retentions[s.name]
		}
		horizons = append(horizons, hs...)
		o.ops.scopes = append(o.ops.scopes, scopeRetention{s.scope, o.sources.retentions[s.name]})
	}
	if err := o.ops.checkRetention(logger, horizons); err != nil {
		return fail(ExitUsage, err)
	}
	o.ops.registry.MustRegister(newLagCollector(srcs))
	o.ops.checks = map[string]func(context.Context) error{}
	for _, s := range srcs {
		o.ops.checks[s.name] = s.ready
	}
	if o.Relay.target != "" {
		rs, err := newServeRelay(o, db, logger)
		if err != nil {
			return fail(ExitUsage, err)
		}
		defer rs.close()
		r.sources = append(r.sources, rs)
		o.ops.checks[rs.name] = rs.ready
	}
	stopOps, err := o.ops.start(ctx, env, logger, db)
	if err != nil {
		return fail(ExitFailure, err)
	}
	defer stopOps()
	if o.AS4Listen != "" {
		if r.ln, err = net.Listen("tcp", o.AS4Listen); err != nil {
			return fail(ExitFailure, fmt.Errorf("--as4-listen: %w", err))
		}
	}
	return r.run(ctx)
}

// setupAS4 migrates the AS4 tables and creates the endpoint's handler.
func setupAS4[TTx any](ctx context.Context, o *serveOptions, db *inboxDB, driver store.Driver[TTx], exec txExecFunc[TTx],
	newAS4 func(context.Context) (as4.Store[TTx], error), logger *slog.Logger) (*as4.Handler[TTx], int, error) {
	st, err := newAS4(ctx)
	if err != nil {
		return nil, ExitFailure, fmt.Errorf("AS4 tables: %w", err)
	}
	if p, ok := any(st).(interface {
		Purge(context.Context, time.Time, int) (int64, error)
	}); ok {
		o.ops.alsoPurge = p.Purge // AS4 messages expire with the inbox rows
	}
	agreements, err := o.agreements()
	if err != nil {
		return nil, ExitUsage, err
	}
	sec, err := o.AS4Security.config(o.AS4RequireSignature && o.AS4Partner == "")
	if err != nil {
		return nil, ExitUsage, err
	}
	h, err := as4.New(driver, as4.Config[TTx]{
		Security: sec, Store: st, Inbox: txinbox.Config[TTx]{Scope: o.Scope, Logger: logger, Hooks: o.ops.hooks}, Logger: logger,
		Deliver:      serveDeliver(o.Effect, o.EffectSQL, db.outboxTable(), exec),
		MaxBodyBytes: o.AS4MaxBody, AcceptUnverifiedSecurity: o.AS4AcceptUnverifiedSecurity,
		MaxConcurrentRequests: o.AS4MaxConcurrent, MaxDecompressedBytes: o.AS4MaxDecompressed, Agreements: agreements,
	})
	if err != nil {
		return nil, ExitUsage, err
	}
	return h, 0, nil
}

// cutAfterTimeout is the end of a stop that took longer than
// --shutdown-timeout: it says what held it (the sources still running
// and whether batches were in flight) and cuts the batches. It reports
// whether nothing was lost: no batch was in flight, only a source waiting
// on its broker (a Kafka consumer-group rebalance that does not end, say).
func (r *serveRun) cutAfterTimeout(stuck []string) bool {
	n := r.inFlight.Load()
	// Nothing of the cut batches is acked: they come back and are
	// found in the inbox if they committed after all.
	r.cutBatches()
	if n == 0 {
		fmt.Fprintf(r.env.Stderr, "txinbox serve: %s did not stop within %s, waiting on its broker (no batch was in flight: nothing is lost)\n",
			strings.Join(stuck, ", "), r.o.ShutdownTimeout)
		return true
	}
	fmt.Fprintf(r.env.Stderr, "txinbox serve: %d batches still in flight after %s were cut (sources not stopped: %s)\n",
		n, r.o.ShutdownTimeout, strings.Join(stuck, ", "))
	return false
}

// agreements returns the AS4 agreements of --as4-agreements and of
// --as4-partner/--as4-self.
func (o *serveOptions) agreements() ([]as4.Agreement, error) {
	var as []as4.Agreement
	if o.AS4Agreements != "" {
		var err error
		if as, err = as4.LoadAgreements(o.AS4Agreements); err != nil {
			return nil, fmt.Errorf("--as4-agreements: %w", err)
		}
	}
	if o.AS4Partner != "" {
		from, to := party(o.AS4Partner, "").IDs[0], party(o.AS4Self, "").IDs[0]
		as = append(as, as4.Agreement{Name: "as4-partner", From: as4.PartyRef{ID: from.ID, Type: from.Type}, To: as4.PartyRef{ID: to.ID, Type: to.Type},
			RequireSignature: o.AS4RequireSignature, RequireCompression: o.AS4RequireCompression})
	}
	return as, nil
}

// run serves until ctx is done, a source fails to start or the AS4
// listener fails; then it stops: the AS4 server stops accepting and
// answers the requests in flight, the sources stop fetching and commit and
// ack the batches in flight, all within --shutdown-timeout.
func (r *serveRun) run(ctx context.Context) int {
	runCtx, stopSources := context.WithCancel(ctx)
	defer stopSources()
	failed := make(chan error, len(r.sources)+1)
	var wg sync.WaitGroup
	names := []string{}
	stopped := make([]atomic.Bool, len(r.sources))
	for i, s := range r.sources {
		wg.Go(func() {
			defer stopped[i].Store(true)
			if err := s.run(runCtx); err != nil {
				failed <- fmt.Errorf("%s source: %w", s.name, err)
			}
		})
		names = append(names, s.name)
		if s.scope == "" {
			fmt.Fprintf(r.env.Stdout, "%s running\n", s.name)
		} else {
			fmt.Fprintf(r.env.Stdout, "%s source running, scope %s\n", s.name, s.scope)
		}
	}
	if r.srv != nil {
		go func() { failed <- r.srv.Serve(r.ln) }()
		names = append([]string{"as4"}, names...)
		fmt.Fprintf(r.env.Stdout, "as4 endpoint listening on http://%s/as4\n", r.ln.Addr())
	}
	r.o.ops.ready.Store(true)
	fmt.Fprintf(r.env.Stdout, "ready: %s\n", strings.Join(names, ", "))
	code := ExitOK
	select {
	case <-ctx.Done():
	case err := <-failed:
		fmt.Fprintln(r.env.Stderr, "txinbox serve:", err)
		code = ExitFailure
		if _, refused := errors.AsType[*kafka.RefusedError](err); refused {
			code = ExitUsage // the configuration is wrong: retrying cannot help
		}
	}
	r.o.ops.ready.Store(false)
	stopSources()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.ShutdownTimeout)
	defer cancel()
	if r.srv != nil {
		if err := r.srv.Shutdown(dctx); err != nil {
			r.srv.Close()
			fmt.Fprintf(r.env.Stderr, "txinbox serve: requests still in flight after %s were cut: %v\n", r.o.ShutdownTimeout, err)
			code = ExitFailure
		}
	}
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-dctx.Done():
		var stuck []string
		for i, s := range r.sources {
			if !stopped[i].Load() {
				stuck = append(stuck, s.name)
			}
		}
		if !r.cutAfterTimeout(stuck) {
			code = ExitFailure
		}
		select {
		case <-drained:
		case <-time.After(5 * time.Second): // a source stuck on its broker: exit anyway
		}
	}
	if code == ExitOK {
		fmt.Fprintln(r.env.Stdout, "stopped")
	}
	return code
}
