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
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/store"
)

func init() {
	register("serve", "run the receiving endpoints (AS4) until SIGTERM", runServe)
}

// serveOptions configures the serve command; each field is one flag.
type serveOptions struct {
	// db names the inbox database (--db, --schema, --table-prefix); the
	// inbox and AS4 tables are migrated at start. Required.
	db dbFlags
	// Scope is the inbox scope of received messages. Defaults to "as4".
	Scope string
	// AS4Listen is the address of the AS4 endpoint, served at path /as4.
	// Required (it is the only endpoint so far).
	AS4Listen string
	// AS4MaxBody is the largest AS4 request accepted, in bytes; larger
	// ones get 413. Defaults to 50 MiB.
	AS4MaxBody int64
	// AS4AcceptUnverifiedSecurity accepts messages whose wsse:Security is
	// marked mustUnderstand without verifying it (TLS or a gateway in
	// front does). Defaults to false: they are refused.
	AS4AcceptUnverifiedSecurity bool
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
	// ShutdownTimeout is how long a stop waits for requests in flight
	// before it closes their connections and exits 1. Defaults to 30s.
	ShutdownTimeout time.Duration
	// Effect is what runs for each new message in the inbox transaction:
	// none (the AS4 tables only), outbox or sql. Defaults to none.
	Effect string
	// EffectSQL are the statements of --effect sql.
	EffectSQL statements
	// ops: --http-listen, --log-format, --retention, --purge-interval,
	// --no-purge.
	ops serveOps
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
	case o.AS4Listen == "":
		return errors.New("--as4-listen is required: the address of the AS4 endpoint, e.g. :8080")
	case o.AS4MaxBody < 0:
		return errors.New("--as4-max-body must not be negative")
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
	fs.StringVar(&o.Scope, "scope", as4.DefaultScope, "inbox scope of the received messages")
	fs.StringVar(&o.AS4Listen, "as4-listen", "", "address of the AS4 endpoint (path /as4), e.g. :8080")
	fs.Int64Var(&o.AS4MaxBody, "as4-max-body", as4.DefaultMaxBodyBytes, "largest AS4 request in bytes (larger: 413)")
	fs.BoolVar(&o.AS4AcceptUnverifiedSecurity, "as4-accept-unverified-security", false,
		"accept wsse:Security marked mustUnderstand without verifying it (only behind TLS client auth or a verifying gateway)")
	fs.DurationVar(&o.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "time allowed to read a request's headers")
	fs.DurationVar(&o.ReadTimeout, "read-timeout", 5*time.Minute, "time allowed to read a whole request")
	fs.DurationVar(&o.WriteTimeout, "write-timeout", 6*time.Minute, "time allowed from a request's headers to the end of its answer")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 2*time.Minute, "keep-alive connections idle this long are closed")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "time a stop waits for requests in flight")
	o.ops.register(fs)
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
		st, err := as4pg.New(db.pg.Pool(), as4pg.Options{Schema: o.db.schema, TablePrefix: o.db.prefix})
		if err == nil {
			err = st.Migrate(ctx)
		}
		return serveAS4[pgx.Tx](ctx, env, &o, db, db.pg, st, pgTxExec, err)
	}
	st, err := as4sqlite.New(db.lite.DB(), as4sqlite.Options{TablePrefix: o.db.prefix})
	if err == nil {
		err = st.Migrate(ctx)
	}
	return serveAS4[*sql.Tx](ctx, env, &o, db, db.lite, st, sqlTxExec, err)
}

// serveAS4 runs the AS4 endpoint until ctx is done, then stops accepting,
// lets the requests in flight finish and returns.
func serveAS4[TTx any](ctx context.Context, env *Env, o *serveOptions, db *inboxDB, driver store.Driver[TTx], st as4.Store[TTx],
	exec txExecFunc[TTx], migrateErr error) int {
	if migrateErr != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve: AS4 tables:", migrateErr)
		return ExitFailure
	}
	if err := checkStatements(ctx, db, o.EffectSQL); err != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve:", err)
		return ExitUsage
	}
	logger := o.ops.logger(env.Stderr)
	o.ops.setup()
	if p, ok := any(st).(interface {
		Purge(context.Context, time.Time, int) (int64, error)
	}); ok {
		o.ops.alsoPurge = p.Purge // AS4 messages expire with the inbox rows
	}
	stopOps, err := o.ops.start(ctx, env, logger, db)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve:", err)
		return ExitFailure
	}
	defer stopOps()
	h, err := as4.New(driver, as4.Config[TTx]{
		Store: st, Inbox: txinbox.Config[TTx]{Scope: o.Scope, Logger: logger, Hooks: []txinbox.Hook{o.ops.metrics}}, Logger: logger,
		Deliver:      serveDeliver(o.Effect, o.EffectSQL, db.outboxTable(), exec),
		MaxBodyBytes: o.AS4MaxBody, AcceptUnverifiedSecurity: o.AS4AcceptUnverifiedSecurity,
	})
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve:", err)
		return ExitUsage
	}
	defer h.Close() // after the server stopped: the batches in flight commit
	ln, err := net.Listen("tcp", o.AS4Listen)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve: --as4-listen:", err)
		return ExitFailure
	}
	mux := http.NewServeMux()
	mux.Handle("/as4", h)
	srv := &http.Server{
		Handler: mux, ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	fmt.Fprintf(env.Stdout, "as4 endpoint listening on http://%s/as4\n", ln.Addr())
	o.ops.ready.Store(true)
	return runServer(ctx, env, srv, ln, o.ShutdownTimeout)
}

// runServer serves until ctx is done or the listener fails, then shuts the
// server down gracefully within timeout.
func runServer(ctx context.Context, env *Env, srv *http.Server, ln net.Listener, timeout time.Duration) int {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		fmt.Fprintln(env.Stderr, "txinbox serve:", err)
		return ExitFailure
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-served // http.ErrServerClosed, at once
	if err != nil {
		srv.Close()
		fmt.Fprintf(env.Stderr, "txinbox serve: requests still in flight after %s were cut: %v\n", timeout, err)
		return ExitFailure
	}
	fmt.Fprintln(env.Stdout, "stopped")
	return ExitOK
}
