// Command amqp consumes a RabbitMQ queue into a SQLite inbox: each
// delivery's side effect (a row of the invoices table) commits once, in
// the transaction that records its message_id, and the delivery is acked
// only after that commit. A producer's re-send with the same message_id is
// a duplicate. Ctrl-C stops it.
//
//	go run ./examples/amqp -url amqp://guest:guest@localhost:5672/ -queue invoices
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/amqp"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "amqp example:", err)
		os.Exit(1)
	}
}

// run consumes until ctx is done, then prints what the consumer did.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("amqp", flag.ContinueOnError)
	url := fs.String("url", envOr("AMQP_URL", "amqp://guest:guest@localhost:5672/"), "RabbitMQ URL (default $AMQP_URL)")
	queue := fs.String("queue", "invoices", "queue consumed, declared as a quorum queue if missing; also the inbox scope")
	dbPath := fs.String("db", "inbox.db", "SQLite file of the inbox and the invoices table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	driver, err := openInbox(ctx, *dbPath)
	if err != nil {
		return err
	}
	defer driver.Close()
	proc, err := newProcessor(driver, *queue)
	if err != nil {
		return err
	}
	// The source: it hands the processor batches and acks what committed.
	c, err := amqp.New(proc, amqp.Config{URL: *url, Queue: *queue,
		Setup: func(ch *amqp091.Channel) error {
			_, err := ch.QueueDeclare(*queue, true, false, false, false, amqp091.Table{"x-queue-type": "quorum"})
			return err
		}})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "consuming queue %s into %s; Ctrl-C stops\n", *queue, *dbPath)
	if err := c.Run(ctx); err != nil {
		return err
	}
	s := c.Stats()
	fmt.Fprintf(out, "processed %d, duplicates %d, dead-lettered %d, acked %d\n", s.Processed, s.Duplicates, s.DeadLettered, s.Acked)
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
func newProcessor(driver *sqlitestore.Driver, scope string) (*txinbox.Processor[*sql.Tx], error) {
	return txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{
		Scope: scope,
		Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO invoices VALUES (?, ?)`, m.ID, string(m.Payload))
			return err
		},
	})
}
