// Command kafka-postgres is the PostgreSQL quick start: a Kafka consumer
// group into an inbox on PostgreSQL through pgx. Each record's side effect
// (a row of the invoices table, written on the pgx.Tx with $1 parameters)
// commits in the transaction that records its id, and offsets are
// committed to Kafka only after that commit. A record the handler refuses
// for good (an invoice for an unknown customer) is dead-lettered at once;
// README.md walks through finding it with the txinbox binary and replaying
// it. Ctrl-C stops it.
//
//	go run ./examples/kafka-postgres -db postgres://localhost/billing -brokers localhost:9092
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store/pgstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kafka-postgres:", err)
		os.Exit(1)
	}
}

// run consumes until ctx is done, then prints what the consumer did.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("kafka-postgres", flag.ContinueOnError)
	db := fs.String("db", envOr("DATABASE_URL", "postgres://localhost/billing"), "PostgreSQL URL of the inbox and the invoices table (default $DATABASE_URL)")
	brokers := fs.String("brokers", envOr("KAFKA_BROKERS", "localhost:9092"), "bootstrap brokers, separated by commas (default $KAFKA_BROKERS)")
	topics := fs.String("topics", "invoices", "topics consumed, separated by commas")
	group := fs.String("group", "billing", "consumer group, also the inbox scope")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, *db)
	if err != nil {
		return err
	}
	defer pool.Close()
	driver, err := openInbox(ctx, pool)
	if err != nil {
		return err
	}
	// Ordered: a record being retried holds back the later records of its
	// partition (the Kafka source requires it).
	proc, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{Scope: *group, Ordered: true, Handler: handleInvoice})
	if err != nil {
		return err
	}
	c, err := kafka.New(proc, kafka.Config{Seeds: strings.Split(*brokers, ","), Topics: strings.Split(*topics, ","),
		Group: *group, Key: kafka.HeaderKey("message-id")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "consuming %s from %s; Ctrl-C stops\n", *topics, *brokers)
	if err := c.Run(ctx); err != nil {
		return err
	}
	s := c.Stats()
	fmt.Fprintf(out, "processed %d, duplicates %d, dead-lettered %d, offset commits %d\n", s.Processed, s.Duplicates, s.DeadLettered, s.Commits)
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// tables are the business tables of the example: the customers known to
// billing (ACME only, at first) and one invoices row per processed record.
const tables = `
CREATE TABLE IF NOT EXISTS customers (id text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS invoices (message_id text PRIMARY KEY, customer text NOT NULL REFERENCES customers, amount numeric NOT NULL);
INSERT INTO customers VALUES ('ACME') ON CONFLICT DO NOTHING`

// openInbox migrates the inbox tables (as `txinbox migrate --db URL` does)
// and creates the business tables.
func openInbox(ctx context.Context, pool *pgxpool.Pool) (*pgstore.Driver, error) {
	driver, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		return nil, err
	}
	if err := driver.Migrate(ctx); err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, tables); err != nil {
		return nil, err
	}
	return driver, nil
}

// invoice is a record's payload: {"customer":"ACME","amount":"12.50"}.
type invoice struct {
	Customer string `json:"customer"`
	Amount   string `json:"amount"`
}

// handleInvoice writes the record's invoices row in the inbox's own
// transaction: both commit, or neither. A payload that is no invoice, or an
// invoice for a customer billing does not know, cannot succeed by retrying:
// txinbox.Permanent dead-letters it at once, and its redeliveries are
// refused until an operator replays it (txinbox dlq replay). Any other
// error is retried.
func handleInvoice(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
	var inv invoice
	if err := json.Unmarshal(m.Payload, &inv); err != nil {
		return txinbox.Permanent(fmt.Errorf("not an invoice: %w", err))
	}
	var known bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM customers WHERE id = $1)`, inv.Customer).Scan(&known); err != nil {
		return err
	}
	if !known {
		return txinbox.Permanent(fmt.Errorf("unknown customer %q", inv.Customer))
	}
	_, err := tx.Exec(ctx, `INSERT INTO invoices (message_id, customer, amount) VALUES ($1, $2, $3)`, m.ID, inv.Customer, inv.Amount)
	return err
}
