package serve

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4effect"
	"github.com/txinbox/txinbox/as4/as4my"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/httpfront"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store"
)

// Command is txinbox serve. Its flags are defined by
// defineServeFlags and put in groups by name here (cli.go, Flag groups).
type Command struct {
	o      serveOptions
	config *string
}

// Info describes txinbox serve for help and completion.
func (c *Command) Info() clikit.CommandInfo {
	titles := sourceTitles()
	return clikit.CommandInfo{Name: "serve", Summary: "run the sources (AS4, " + strings.Join(titles, ", ") + ") until SIGTERM",
		Description: wrapText(`Runs every configured source over one inbox until SIGINT or SIGTERM: an AS4 `+
			`endpoint at /as4, webhooks at /ingest/NAME (--ingress-listen, signatures checked), `+joinList(titles, "and")+` consumers, an effect without Go (--effect outbox|sql), `+
			`optionally the outbox relay (--relay-target), the background purger, and /healthz, /readyz and /metrics `+
			`on --http-listen. The inbox and AS4 tables are migrated at start, and the retention is checked against `+
			`what each source can deliver again. Settings come from the flags, then the environment, then --config FILE, `+
			`then the defaults. A first signal drains (batches in flight commit); a second one ends the process at once.`, 76),
		Examples: []clikit.Example{{Command: "txinbox serve --db postgres://localhost/billing --as4-listen :8080 --http-listen :9090"},
			{Command: "txinbox serve --config txinbox.yaml", What: "settings from a YAML file (keys are the flag names)"},
			{Command: "TXINBOX_DB=inbox.db txinbox serve --kafka-brokers localhost:9092 --kafka-topics invoices --effect outbox"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "stopped by a signal after a clean drain"},
			{Code: clikit.ExitFailure, What: "a source or the database failed (also a database that does not answer at start), or the drain was cut by --shutdown-timeout"},
			{Code: clikit.ExitUsage, What: "bad flags or configuration, a retention shorter than a source's horizon, a database setting that can lose acknowledged messages (see --accept-durability-risk), or the database cannot be opened"}}}
}

// Define defines the flags of txinbox serve.
func (c *Command) Define(fs *clikit.FlagSet, env *clikit.Env) {
	c.config = defineServeFlags(fs.FlagSet, env, &c.o)
	fs.GroupPrefix("Database", "db", "schema", "table-prefix")
	fs.GroupPrefix("AS4 endpoint", "as4-", "scope", "read-", "write-", "idle-")
	fs.GroupPrefix("Webhook ingress", "ingress")
	fs.GroupPrefix("HTTP front (AS4 endpoint and ingress)", "min-body-rate", "max-requests-per-client", "max-body-in-flight")
	for _, k := range c.o.sources {
		fs.GroupPrefix(k.title()+" source", k.name()+"-")
	}
	fs.GroupPrefix("Effect", "effect")
	fs.GroupPrefix("Outbox relay", "relay-")
	fs.GroupPrefix("Retention and purge", "retention", "purge-", "no-purge", "retry-window", "accept-short-retention")
	fs.GroupPrefix("Web console", "console-", "no-console")
	fs.GroupPrefix("Operations", "http-listen", "log-", "otel-", "shutdown-timeout", "config", "accept-durability-risk")
}

// Run runs txinbox serve with the flags parsed.
func (c *Command) Run(ctx context.Context, in *clikit.Invocation) int {
	if err := c.o.finish(in.Flags.FlagSet, in.Env, *c.config); err != nil {
		return clikit.UsageError(in.Env, in.Path, err.Error())
	}
	return runServe(ctx, in.Env, c.o)
}

// serveOptions configures the serve command; each field is one flag.
type serveOptions struct {
	// db names the inbox database (--db, --schema, --table-prefix); the
	// inbox and AS4 tables are migrated at start. Required.
	db clikit.DBFlags
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
	// ...). With --as4-trust every message needs a verified signature
	// unless --as4-allow-unsigned.
	AS4Security serveSecurity
	// IngressListen is the webhook ingress's address (POST
	// /ingest/{name}); Ingress its routes (--ingress, repeatable);
	// IngressMaxBody the largest delivery. Default: none, none, 1 MiB.
	IngressListen  string
	Ingress        ingressRoutes
	IngressMaxBody int64
	// Front are the limits of the endpoints' hardened front
	// (--min-body-rate, --max-requests-per-client, --max-body-in-flight);
	// its MaxBodyBytes is --as4-max-body.
	Front server.Front
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
	as4Retention server.Retention
	// Relay runs an outbox relay beside the sources: --relay-target and
	// the other relay-* flags, named as txinbox relay's.
	Relay relayFlags
	// ops: --http-listen, --log-format, --retention, --purge-interval,
	// --no-purge, --retry-window, --accept-short-retention.
	ops serveOps
	// sources are the flags of a source of each kind (sourceKinds):
	// --kafka-*, --amqp-*, ...
	sources []sourceKind
	// listed are the sources of the config file's lists, one per kind:
	// kafka:, amqp:, ... (serve_config.go).
	listed []listedSource
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
	case (o.IngressListen == "") != (len(o.Ingress) == 0):
		return errors.New("--ingress-listen and --ingress go together (the webhook ingress's address and its routes)")
	case o.AS4Listen == "" && o.IngressListen == "" && !anyConfigured(o.sources) && len(o.listed) == 0 && o.Relay.target == "":
		return errors.New("no source: give --as4-listen (an AS4 endpoint, e.g. :8080), --ingress-listen (webhooks), " + onFlags() +
			" (or --relay-target to run only the outbox relay)")
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
	case o.AS4RequireSignature && o.AS4Security.AllowUnsigned && o.AS4Partner == "":
		return errors.New("--as4-require-signature without --as4-partner requires signatures of every message, which --as4-allow-unsigned contradicts")
	case o.AS4Listen != "" && o.Effect == string(effect.SQL) && o.effectSpec().SetBased():
		return errors.New("--effect-sql: the AS4 endpoint runs its statements per message, where new_messages does not exist: " +
			"give statements with $N parameters (see txinbox serve -h) or run the AS4 endpoint in a serve of its own")
	case o.IngressListen != "" && o.Effect == string(effect.SQL) && o.effectSpec().SetBased():
		return errors.New("--effect-sql: the webhook ingress runs its statements per delivery, where new_messages does not exist: give statements with $N parameters")
	case o.ReadHeaderTimeout < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.IdleTimeout < 0 || o.ShutdownTimeout < 0:
		return errors.New("timeouts must not be negative")
	}
	return nil
}

// defineServeFlags defines serve's flags on fs, bound to o; it returns
// where --config goes.
func defineServeFlags(fs *flag.FlagSet, env *clikit.Env, o *serveOptions) *string {
	o.db.Register(fs, env)
	fs.StringVar(&o.Scope, "scope", as4.DefaultScope, "inbox scope of the AS4 messages")
	clikit.DurationTextFlag(fs, &o.AS4Retention, "as4-retention", "", "keep the AS4 scope's inbox rows this long (default: --retention)")
	fs.StringVar(&o.AS4Listen, "as4-listen", "", "address of the AS4 endpoint (path /as4), e.g. :8080 (default: none)")
	clikit.Int64Flag(fs, &o.AS4MaxBody, "as4-max-body", as4.DefaultMaxBodyBytes, 1, "largest AS4 request in bytes (larger: 413)")
	fs.BoolVar(&o.AS4AcceptUnverifiedSecurity, "as4-accept-unverified-security", false,
		"accept wsse:Security marked mustUnderstand without verifying it (only behind TLS client auth or a verifying gateway)")
	clikit.IntFlag(fs, &o.AS4MaxConcurrent, "as4-max-concurrent", as4.DefaultMaxConcurrentRequests, 1, "AS4 requests answered at once (more: 503 with Retry-After)")
	clikit.Int64Flag(fs, &o.AS4MaxDecompressed, "as4-max-decompressed", as4.DefaultMaxDecompressedBytes, 1, "most bytes a message's gzip payloads may decompress to (more: EBMS:0303)")
	fs.StringVar(&o.AS4Agreements, "as4-agreements", "", "YAML file of AS4 partner agreements (P-Modes); messages outside them get EBMS:0010 (default: accept any partner)")
	fs.StringVar(&o.AS4Partner, "as4-partner", "", "one agreement: the partner's From PartyId (type:id or id), with --as4-self")
	fs.StringVar(&o.AS4Self, "as4-self", "", "one agreement: our To PartyId (type:id or id), with --as4-partner")
	fs.BoolVar(&o.AS4RequireSignature, "as4-require-signature", false, "require signatures verified with --as4-trust: of the --as4-partner agreement, or without it of every message")
	o.AS4Security.register(fs, env)
	fs.BoolVar(&o.AS4RequireCompression, "as4-require-compression", false, "the --as4-partner agreement requires gzip-compressed payloads")
	clikit.Int64Flag(fs, &o.Front.MinBodyRate, "min-body-rate", httpfront.DefaultMinBodyRate, 1,
		"bytes a second a request body must arrive at on average after its first 10s (slower: 408, the connection closed)")
	clikit.IntFlag(fs, &o.Front.MaxPerClient, "max-requests-per-client", httpfront.DefaultMaxPerClient, 1, "requests one client IP address may have in flight (more: 429)")
	clikit.Int64Flag(fs, &o.Front.MaxBodyBytesInFlight, "max-body-in-flight", httpfront.DefaultMaxBodyBytesInFlight, 1,
		"bytes of request bodies being read or answered, all clients together, counted as they arrive (more: 503)")
	clikit.DurationFlag(fs, &o.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, false, "time allowed to read a request's headers")
	clikit.DurationFlag(fs, &o.ReadTimeout, "read-timeout", 5*time.Minute, false, "time allowed to read a whole request")
	clikit.DurationFlag(fs, &o.WriteTimeout, "write-timeout", 6*time.Minute, false, "time allowed from a request's headers to the end of its answer")
	clikit.DurationFlag(fs, &o.IdleTimeout, "idle-timeout", 2*time.Minute, false, "keep-alive connections idle this long are closed")
	clikit.DurationFlag(fs, &o.ShutdownTimeout, "shutdown-timeout", 30*time.Second, false, "time a stop waits for requests and batches in flight")
	o.ops.register(fs)
	o.Relay.register(fs, env, "relay-")
	o.sources = newSourceKinds()
	for _, k := range o.sources {
		k.register(fs)
	}
	fs.StringVar(&o.IngressListen, "ingress-listen", "", "address of the webhook ingress (POST /ingest/NAME for each --ingress route), e.g. :8081 (default: none)")
	fs.Var(&o.Ingress, "ingress", "a webhook route (repeatable): name=NAME,key=idempotency-key|header:H|json:FIELD,"+
		"signature=none|github|stripe|hmac:HEADER,secret-file=F|secret-env=VAR[,encoding=hex|base64][,prefix=P][,tolerance=300s]")
	clikit.Int64Flag(fs, &o.IngressMaxBody, "ingress-max-body", 1<<20, 1, "largest webhook delivery in bytes (larger: 413)")
	fs.StringVar(&o.Effect, "effect", string(effect.None), "side effect per new message, in its transaction: none, outbox (payloads to the txinbox_outbox table) or sql")
	fs.Var(&o.EffectSQL, "effect-sql", "a statement for --effect sql (repeatable); parameters: "+effect.Params)
	return fs.String("config", "", "read settings from this YAML `FILE` (keys are these flags' names, and "+listKeys()+
		" lists of named sources; the environment's TXINBOX_* and the flags win)")
}

// finish reads --config, then checks the settings and fills the defaults;
// an error found in a value the config file gave names its line.
func (o *serveOptions) finish(fs *flag.FlagSet, env *clikit.Env, config string) error {
	origins, err := clikit.LoadConfig(fs, env, config, o.sourceSections())
	if err != nil {
		return err
	}
	if err := o.validateFlags(); err != nil {
		return origins.Locate(err)
	}
	*o = o.withDefaults()
	return origins.Locate(o.validate())
}

// validateFlags checks and parses what the flag values alone cannot.
func (o *serveOptions) validateFlags() error {
	if err := o.ops.validate(); err != nil {
		return err
	}
	var err error
	if o.as4Retention, err = retentionOr("as4-retention", o.AS4Retention, o.ops.defaultRetention()); err != nil {
		return err
	}
	if err := validateKinds(o.sources, o.ops.retryWindow, o.ops.defaultRetention()); err != nil {
		return err
	}
	if err := o.validateListed(o.ops.retryWindow, o.ops.defaultRetention()); err != nil {
		return err
	}
	return o.effectSpec().Validate()
}

func runServe(ctx context.Context, env *clikit.Env, o serveOptions) int {
	db, err := clikit.OpenDB(ctx, o.db, 8)
	if stoppedStarting(ctx, env, "txinbox serve", err) {
		return clikit.ExitOK
	} else if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve:", clikit.Clip(err.Error()))
		if _, down := errors.AsType[clikit.ConnectError](err); down {
			return clikit.ExitFailure // the database does not answer: it may later
		}
		return clikit.ExitUsage
	}
	defer db.Close()
	if err := db.Admin.Migrate(ctx); stoppedStarting(ctx, env, "txinbox serve", err) {
		return clikit.ExitOK
	} else if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox serve: migrating %s: %v\n", db.Where, err)
		return clikit.ExitFailure
	}
	if db.PG != nil {
		return serveWith[pgx.Tx](ctx, env, &o, db, db.PG, func(ctx context.Context) (as4.Store[pgx.Tx], error) {
			return pgAS4(ctx, db, &o)
		})
	}
	if db.My != nil {
		return serveWith[*sql.Tx](ctx, env, &o, db, db.SQL, func(ctx context.Context) (as4.Store[*sql.Tx], error) {
			st, err := as4my.New(db.My.DB(), as4my.Options{TablePrefix: o.db.Prefix})
			if err == nil {
				err = st.Migrate(ctx)
			}
			return st, err
		})
	}
	return serveWith[*sql.Tx](ctx, env, &o, db, db.SQL, func(ctx context.Context) (as4.Store[*sql.Tx], error) {
		return sqliteAS4(ctx, db, &o)
	})
}

// pgAS4 and sqliteAS4 open and migrate the AS4 tables.
func pgAS4(ctx context.Context, db *clikit.InboxDB, o *serveOptions) (as4.Store[pgx.Tx], error) {
	st, err := as4pg.New(db.PG.Pool(), as4pg.Options{Schema: o.db.Schema, TablePrefix: o.db.Prefix})
	if err == nil {
		err = st.Migrate(ctx)
	}
	return st, err
}

// sqliteAS4 is also the AS4 tables of PostgreSQL on database/sql
// (as4pg.SQLStore).
func sqliteAS4(ctx context.Context, db *clikit.InboxDB, o *serveOptions) (as4.Store[*sql.Tx], error) {
	if db.SQLPG != nil {
		st, err := as4pg.NewSQL(db.SQLPG.DB(), as4pg.Options{Schema: o.db.Schema, TablePrefix: o.db.Prefix})
		if err == nil {
			err = st.Migrate(ctx)
		}
		return st, err
	}
	st, err := as4sqlite.New(db.Lite.DB(), as4sqlite.Options{TablePrefix: o.db.Prefix})
	if err == nil {
		err = st.Migrate(ctx)
	}
	return st, err
}

// serveWith builds the service and runs it until ctx is done.
func serveWith[TTx any](ctx context.Context, env *clikit.Env, o *serveOptions, db *clikit.InboxDB, driver store.Driver[TTx],
	newAS4 func(context.Context) (as4.Store[TTx], error)) int {
	eff, err := newEffect(ctx, o, db, driver)
	if err == nil {
		err = checkEffect(ctx, eff, db)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve:", clikit.Clip(err.Error()))
		return clikit.ExitUsage
	}
	logger := o.ops.logger(env.Stderr)
	tp, stopTraces, err := o.ops.traces.start(ctx, env.Stderr, logger)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve:", clikit.Clip(err.Error()))
		return clikit.ExitUsage
	}
	defer stopTraces() // after the sources stopped: their last spans are flushed
	srv, closeAll, code, err := buildServer(ctx, env, o, db, driver, eff, newAS4, logger, tp)
	defer closeAll() // after the server stopped: the batches in flight commit
	if stoppedStarting(ctx, env, "txinbox serve", err) {
		return clikit.ExitOK
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox serve:", clikit.Clip(err.Error()))
		return code
	}
	return serveExit(env, srv.Run(ctx))
}

// stoppedStarting says "stopped during start-up" when err is the signal's
// cancellation ending a start-up step (migrating, connecting to a
// broker): what the user asked for, not a failure.
func stoppedStarting(ctx context.Context, env *clikit.Env, cmd string, err error) bool {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return false
	}
	fmt.Fprintln(env.Stderr, cmd+": stopped during start-up")
	return true
}

// buildServer builds the service (package server) of the options, with
// the AS4 endpoint and the broker sources added; closeAll closes what it
// opened, once the server stopped. code is the exit status of err.
func buildServer[TTx any](ctx context.Context, env *clikit.Env, o *serveOptions, db *clikit.InboxDB, driver store.Driver[TTx],
	eff *effect.Effect[TTx], newAS4 func(context.Context) (as4.Store[TTx], error), logger *slog.Logger,
	tp trace.TracerProvider) (srv *server.Server, closeAll func(), code int, err error) {
	var closers []func()
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	var as4Store as4.Store[TTx]
	if o.AS4Listen != "" {
		if as4Store, err = newAS4(ctx); err != nil {
			return nil, closeAll, clikit.ExitFailure, fmt.Errorf("AS4 tables: %w", err)
		}
	}
	cfg, closeRelay, err := o.serverConfig(env, db, logger, tp, as4Store)
	if err != nil {
		return nil, closeAll, clikit.ExitUsage, err
	}
	closers = append(closers, closeRelay)
	if srv, err = server.New(cfg); err != nil {
		return nil, closeAll, clikit.ExitUsage, err
	}
	if as4Store != nil {
		h, err := addAS4(srv, o, driver, eff, as4Store, logger)
		if err != nil {
			return nil, closeAll, clikit.ExitUsage, err
		}
		closers = append(closers, func() { h.Close() })
	}
	if o.IngressListen != "" {
		closeIngress, err := addIngress(srv, o, env, driver, eff, logger)
		if err != nil {
			return nil, closeAll, clikit.ExitUsage, err
		}
		closers = append(closers, closeIngress)
	}
	closeSources, err := addSources(srv, o, driver, eff, env, logger)
	if err != nil {
		return nil, closeAll, clikit.ExitUsage, err
	}
	closers = append(closers, closeSources)
	return srv, closeAll, clikit.ExitOK, nil
}

// serveExit prints Run's error and returns serve's exit status: 2 for a
// configuration that cannot work (a retention too short, a group the
// broker refuses for good), 0 for a signal during the start-up, 1 for any
// other failure.
func serveExit(env *clikit.Env, err error) int {
	if err == nil {
		return clikit.ExitOK
	}
	if errors.Is(err, server.ErrStartCanceled) { // a signal during the retention check
		fmt.Fprintln(env.Stderr, "txinbox serve: stopped during start-up")
		return clikit.ExitOK
	}
	if _, risky := errors.AsType[*server.DurabilityError](err); risky {
		fmt.Fprintln(env.Stderr, "txinbox serve:", err) // our own lines, bounded: never clipped
		return clikit.ExitUsage
	}
	fmt.Fprintln(env.Stderr, "txinbox serve:", clikit.Clip(err.Error()))
	_, short := errors.AsType[*server.RetentionError](err)
	_, refused := errors.AsType[*kafka.RefusedError](err)
	if short || refused {
		return clikit.ExitUsage // the configuration is wrong: retrying cannot help
	}
	return clikit.ExitFailure
}

// addAS4 creates the AS4 endpoint's handler over st and adds it to srv.
func addAS4[TTx any](srv *server.Server, o *serveOptions, driver store.Driver[TTx], eff *effect.Effect[TTx],
	st as4.Store[TTx], logger *slog.Logger) (*as4.Handler[TTx], error) {
	agreements, err := o.agreements()
	if err != nil {
		return nil, err
	}
	sec, err := o.AS4Security.config(o.requireSignature())
	if err != nil {
		return nil, err
	}
	h, err := as4.New(driver, as4.Config[TTx]{
		Security: sec, Store: st, Inbox: txinbox.Config[TTx]{Scope: o.Scope, Logger: logger, Hooks: srv.RequestHooks()}, Logger: logger,
		Deliver:      as4effect.Deliver(eff),
		MaxBodyBytes: o.AS4MaxBody, AcceptUnverifiedSecurity: o.AS4AcceptUnverifiedSecurity,
		MaxConcurrentRequests: o.AS4MaxConcurrent, MaxDecompressedBytes: o.AS4MaxDecompressed, Agreements: agreements,
	})
	if err != nil {
		return nil, err
	}
	err = srv.AddEndpoint(server.Endpoint{Name: "as4", Listen: o.AS4Listen, Handler: h, Scope: o.Scope,
		RetryWindow: source.Horizon{What: "the AS4 partners", Within: o.ops.retryWindow, Figure: "--retry-window " + o.ops.RetryWindow},
		Retention:   o.as4Retention, ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout, Front: o.front(o.AS4MaxBody)})
	if err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// front is the endpoints' hardened front with the body limit maxBody.
func (o *serveOptions) front(maxBody int64) server.Front {
	f := o.Front
	f.MaxBodyBytes = maxBody
	return f
}

// requireSignature reports whether the endpoint requires a verified
// signature of every user message: with --as4-trust unless
// --as4-allow-unsigned (a trust store that lets a message whose signature
// was stripped pass as unsigned verifies nothing an attacker cannot
// avoid), and with --as4-require-signature without --as4-partner.
func (o *serveOptions) requireSignature() bool {
	return o.AS4Security.Trust != "" && (!o.AS4Security.AllowUnsigned || (o.AS4RequireSignature && o.AS4Partner == ""))
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
