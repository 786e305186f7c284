// Command sqleffect runs, as a Go program on public packages only, what
//
//	txinbox serve --db URL --kafka-brokers B --kafka-topics T --kafka-group G \
//	    --effect sql --effect-sql STATEMENT [--effect-sql STATEMENT ...]
//
// runs: a Kafka consumer group into an inbox on PostgreSQL (a postgres://
// URL) or SQLite (a file path), each new record's side effect given as SQL
// statements run in its inbox transaction (package effect), and around it
// the service of package server: /healthz, /readyz and /metrics on
// --http-listen, the retention check at start, the background purger and
// the two-stage stop on SIGINT or SIGTERM.
//
//	go run ./examples/sqleffect --db inbox.db --kafka-brokers localhost:9092 \
//	    --kafka-topics invoices --kafka-group billing --kafka-key header:message-id \
//	    --effect-sql 'INSERT INTO invoices (message_id, body) VALUES ($2, $9)'
//
// The statements are prepared at start: a typo stops the program, naming
// the statement's number, before a record is consumed. The flags are
// serve's, and each may come from the environment as serve's do
// (TXINBOX_DB, TXINBOX_KAFKA_BROKERS, TXINBOX_EFFECT_SQL: one statement).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "sqleffect:", err)
		os.Exit(1)
	}
}

// options are the serve flags this program keeps, under serve's names.
type options struct {
	db, brokers, topics, group, scope, httpListen string
	key                                           kafka.Key
	retention                                     time.Duration
	statements                                    statementList
}

// statementList is the repeatable --effect-sql.
type statementList []string

func (s *statementList) String() string { return strings.Join(*s, "; ") }

// Set adds one statement.
func (s *statementList) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("empty statement")
	}
	*s = append(*s, v)
	return nil
}

// parseOptions reads the flags, then TXINBOX_<FLAG> for those not given.
func parseOptions(args []string, getenv func(string) string, out io.Writer) (options, error) {
	o := options{key: kafka.OffsetKey, retention: server.DefaultRetention}
	fs := flag.NewFlagSet("sqleffect", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.db, "db", "", "inbox database: a postgres:// URL or a SQLite file path (required)")
	fs.StringVar(&o.brokers, "kafka-brokers", "", "Kafka bootstrap brokers, host:port separated by commas (required)")
	fs.StringVar(&o.topics, "kafka-topics", "", "Kafka topics consumed, separated by commas (required)")
	fs.StringVar(&o.group, "kafka-group", "", "Kafka consumer group (required)")
	fs.Func("kafka-key", "message id of a record: offset (topic/partition/offset) or header:NAME (default offset)", func(s string) (err error) {
		o.key, err = parseKey(s)
		return err
	})
	fs.StringVar(&o.scope, "kafka-scope", "kafka", "inbox scope of the Kafka records")
	fs.StringVar(&o.httpListen, "http-listen", "", "address for /healthz, /readyz and /metrics (default: none)")
	fs.Func("retention", "keep inbox rows this long; the purger deletes older ones (default 30d)", func(s string) (err error) {
		o.retention, err = duration.Parse(s)
		return err
	})
	fs.Var(&o.statements, "effect-sql", "a statement run for each new record in its inbox transaction (repeatable, required), "+
		"or once per batch on PostgreSQL when it reads new_messages and names no $N; parameters: "+effect.Params)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := setFromEnv(fs, getenv); err != nil {
		return o, err
	}
	for _, f := range []string{"db", "kafka-brokers", "kafka-topics", "kafka-group", "effect-sql"} {
		if fs.Lookup(f).Value.String() == "" {
			return o, fmt.Errorf("--%s is required", f)
		}
	}
	return o, nil
}

// parseKey reads --kafka-key.
func parseKey(s string) (kafka.Key, error) {
	if name, ok := strings.CutPrefix(s, "header:"); ok && name != "" {
		return kafka.HeaderKey(name), nil
	} else if s == "offset" {
		return kafka.OffsetKey, nil
	}
	return nil, errors.New("want offset or header:NAME")
}

// setFromEnv sets each flag not given on the command line from
// TXINBOX_<NAME> (--effect-sql: TXINBOX_EFFECT_SQL), as serve does.
func setFromEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "TXINBOX_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(name); v != "" && !given[f.Name] && err == nil {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment %s: %w", name, serr)
			}
		}
	})
	return err
}

// run serves until ctx is done, on the inbox database --db names.
func run(ctx context.Context, args []string, getenv func(string) string, logs io.Writer) error {
	o, err := parseOptions(args, getenv, logs)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	if strings.HasPrefix(o.db, "postgres://") || strings.HasPrefix(o.db, "postgresql://") {
		pool, err := pgxpool.New(ctx, o.db)
		if err != nil {
			return err
		}
		defer pool.Close()
		d, err := pgstore.New(pool, pgstore.Options{})
		if err != nil {
			return err
		}
		return serve(ctx, o, logger, d, pool.Ping)
	}
	d, err := sqlitestore.Open(o.db, sqlitestore.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	return serve(ctx, o, logger, d, d.DB().PingContext)
}

// inbox is what serve needs of a store; *pgstore.Driver and
// *sqlitestore.Driver are one.
type inbox[TTx any] interface {
	store.Driver[TTx]
	store.Purger
	store.GaugeReader
	Migrate(ctx context.Context) error
}

// serve migrates the inbox, checks the statements, and runs the Kafka
// source under package server until ctx is done.
func serve[TTx any](ctx context.Context, o options, logger *slog.Logger, d inbox[TTx], ping func(context.Context) error) error {
	if err := d.Migrate(ctx); err != nil {
		return fmt.Errorf("migrating the inbox: %w", err)
	}
	eff, err := effect.New(ctx, d, effect.Spec{Mode: effect.SQL, Statements: o.statements})
	if err == nil {
		err = eff.Check(ctx) // a typo fails here, with the statement's number, before anything is consumed
	}
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{HTTPListen: o.httpListen, Logger: logger, Ping: ping, Gauges: d,
		Retention: server.Retention{Keep: o.retention, Setting: "--retention " + duration.Format(o.retention)},
		Purge:     &purge.Config{}, Purger: d})
	if err != nil {
		return err
	}
	proc, err := addKafka(srv, o, logger, d, eff)
	if err != nil {
		return err
	}
	defer proc.Close()
	return srv.Run(ctx) // until SIGTERM; then the batches in flight commit and are acked
}

// addKafka adds the Kafka source, its processor given the effect and the
// server's hooks (the drain, the metrics).
func addKafka[TTx any](srv *server.Server, o options, logger *slog.Logger, d store.Driver[TTx],
	eff *effect.Effect[TTx]) (*txinbox.Processor[TTx], error) {
	// Apply joins set-based statements (reading new_messages) to the
	// claim's statement where the store can, else runs them per record.
	// Ordered: a failing record holds back the later ones of its partition.
	proc, err := txinbox.NewProcessor(d, eff.Apply(txinbox.Config[TTx]{Scope: o.scope, Ordered: true, Logger: logger,
		Hooks: srv.Hooks()}, "kafka"))
	if err != nil {
		return nil, err
	}
	consumer, err := kafka.New(proc, kafka.Config{Seeds: strings.Split(o.brokers, ","), Topics: strings.Split(o.topics, ","),
		Group: o.group, Key: o.key, Logger: logger})
	if err == nil {
		err = srv.Add(server.Source{Name: "kafka", Scope: o.scope, Source: consumer})
	}
	if err != nil {
		proc.Close()
		return nil, err
	}
	return proc, nil
}
