// Command kafka consumes Kafka topics as a member of a consumer group into
// a SQLite inbox: each record's side effect (a row of the invoices table)
// commits once, in the transaction that records its id, and offsets are
// committed to Kafka only after that commit. A producer's re-send with the
// same "message-id" header is a duplicate. Ctrl-C stops it.
//
//	go run ./examples/kafka -brokers localhost:9092 -topics invoices
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kafka example:", err)
		os.Exit(1)
	}
}

// run consumes until ctx is done, then prints what the consumer did.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("kafka", flag.ContinueOnError)
	brokers := fs.String("brokers", envOr("KAFKA_BROKERS", "localhost:9092"), "bootstrap brokers, separated by commas (default $KAFKA_BROKERS)")
	topics := fs.String("topics", "invoices", "topics consumed, separated by commas")
	group := fs.String("group", "invoicer", "consumer group, also the inbox scope")
	dbPath := fs.String("db", "inbox.db", "SQLite file of the inbox and the invoices table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	driver, err := openInbox(ctx, *dbPath)
	if err != nil {
		return err
	}
	defer driver.Close()
	proc, err := newProcessor(driver, *group)
	if err != nil {
		return err
	}
	// The source: it hands the processor each partition's records and
	// commits the offsets of what committed.
	c, err := kafka.New(proc, kafka.Config{Seeds: strings.Split(*brokers, ","), Topics: strings.Split(*topics, ","),
		Group: *group, Key: kafka.HeaderKey("message-id")})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "consuming %s from %s into %s; Ctrl-C stops\n", *topics, *brokers, *dbPath)
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

// openInbox opens the SQLite inbox at path, migrated, with the invoices
// table the handler writes.
func openInbox(ctx context.Context, path string) (*sqlitestore.Driver, error) {
	driver, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	if err = driver.Migrate(ctx); err == nil {
		_, err = driver.DB().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS invoices (message_id TEXT PRIMARY KEY, body TEXT)`)
	}
	if err != nil {
		driver.Close()
		return nil, err
	}
	return driver, nil
}

// newProcessor builds the processor: the inbox scope and the side effect,
// run in the inbox's own transaction.
// Ordered: a failed record holds back the later records of its partition.
func newProcessor(driver *sqlitestore.Driver, scope string) (*txinbox.Processor[*sql.Tx], error) {
	return txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{
		Scope:   scope,
		Ordered: true,
		Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO invoices VALUES (?, ?)`, m.ID, string(m.Payload))
			return err
		},
	})
}
