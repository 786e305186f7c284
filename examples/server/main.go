// Command server runs the service that txinbox serve runs (a Kafka source
// and an AS4 endpoint over one PostgreSQL inbox, the retention check, the
// background purger, /healthz, /readyz and /metrics, the two-stage stop)
// with handlers written in Go: each new message is inserted into an
// orders table in the inbox transaction, so it is applied exactly once.
//
//	TXINBOX_DB=postgres://localhost/shop KAFKA_BROKERS=localhost:9092 go run ./examples/server
//
// It imports public packages only: copy it and change the handlers.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store/pgstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, slog.New(slog.NewJSONHandler(os.Stderr, nil))); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, logger *slog.Logger) error {
	pool, err := pgxpool.New(ctx, getenv("TXINBOX_DB", "postgres://localhost:5432/shop"))
	if err != nil {
		return err
	}
	defer pool.Close()
	driver, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		return err
	}
	if err := driver.Migrate(ctx); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS orders (scope text, id text, body bytea, PRIMARY KEY (scope, id))`); err != nil {
		return err
	}
	as4Store, err := as4pg.New(pool, as4pg.Options{})
	if err == nil {
		err = as4Store.Migrate(ctx)
	}
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{
		HTTPListen: getenv("OPS_LISTEN", ":9090"), Logger: logger, Ping: pool.Ping, Gauges: driver,
		Durability: driver, // refuses fsync=off, synchronous_commit=off, asynchronous standbys at start
		Retention:  server.Retention{Keep: 30 * 24 * time.Hour},
		// The AS4 messages are purged with the inbox rows.
		Purge:  &purge.Config{Tables: []purge.Table{{Name: "as4_messages", Purge: as4Store.Purge, Count: as4Store.Expired}}},
		Purger: driver,
		// Handlers of your own on the operations listener.
		Handlers: map[string]http.Handler{"GET /version": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintln(w, "shop 1.0")
		})},
	})
	if err != nil {
		return err
	}
	if err := addKafka(srv, driver, logger); err != nil {
		return err
	}
	endpoint, err := as4.New(driver, as4.Config[pgx.Tx]{Store: as4Store, Logger: logger,
		Inbox:   txinbox.Config[pgx.Tx]{Scope: as4.DefaultScope, Logger: logger, Hooks: srv.RequestHooks()},
		Deliver: saveAS4Order})
	if err != nil {
		return err
	}
	defer endpoint.Close() // after Run: the requests in flight were answered
	err = srv.AddEndpoint(server.Endpoint{Name: "as4", Listen: getenv("AS4_LISTEN", ":8080"), Handler: endpoint,
		Scope:       as4.DefaultScope,
		RetryWindow: source.Horizon{What: "the AS4 partners", Figure: "retry window 7d", Within: 7 * 24 * time.Hour}})
	if err != nil {
		return err
	}
	// Until SIGTERM; then the batches in flight commit and are acked.
	err = srv.Run(ctx)
	if _, short := errors.AsType[*server.RetentionError](err); short {
		return fmt.Errorf("refusing to start: %w", err)
	}
	return err
}

// addKafka adds the Kafka source; its processor gets the server's hooks
// (the drain, the metrics).
func addKafka(srv *server.Server, driver *pgstore.Driver, logger *slog.Logger) error {
	// Ordered: Kafka keeps a partition's records in order, so a failed
	// record holds back the later ones of its partition.
	proc, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{Scope: "orders", Ordered: true, Logger: logger,
		Hooks: srv.Hooks(), Handler: saveOrder})
	if err != nil {
		return err
	}
	consumer, err := kafka.New(proc, kafka.Config{
		Seeds: strings.Split(getenv("KAFKA_BROKERS", "localhost:9092"), ","), Topics: []string{"orders"}, Group: "shop",
		Logger: logger,
	})
	if err != nil {
		return err
	}
	return srv.Add(server.Source{Name: "orders", Scope: "orders", Source: consumer})
}

// saveOrder is the Kafka handler: it runs in the inbox transaction.
func saveOrder(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO orders (scope, id, body) VALUES ($1, $2, $3)`, m.Scope, m.ID, m.Payload)
	return err
}

// saveAS4Order is the AS4 handler: the first payload of each new message.
func saveAS4Order(ctx context.Context, tx pgx.Tx, m *as4.Received) error {
	if len(m.Parts) == 0 {
		return txinbox.Permanent(errors.New("an AS4 message without a payload"))
	}
	_, err := tx.Exec(ctx, `INSERT INTO orders (scope, id, body) VALUES ($1, $2, $3)`, m.Scope, m.Key, m.Parts[0].Data)
	return err
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
