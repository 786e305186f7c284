// Command relay sends the rows that txinbox handlers wrote to the outbox
// (outboxpg.New(d).Add or outboxlite.New(d).Add, in the inbox
// transaction) to an HTTP endpoint: one POST per row, the row marked sent
// only after a 2xx, with the row's stable id in the Idempotency-Key header
// so that the receiver can drop a re-send after a crash. A 5xx, 408, 425
// or 429 is retried with backoff; any other answer fails the row for good
// (list and replay it with `txinbox relay list-failed` / `replay`).
// Run as many copies as you like: each claims its own rows. Ctrl-C stops
// it after the sends in flight.
//
//	go run ./examples/relay -db postgres://localhost/billing -url https://partner.example/invoices
//	go run ./examples/relay -db inbox.db -url http://localhost:8080/in -once
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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/outbox/outboxpg"
	outboxhttp "github.com/txinbox/txinbox/outbox/target/http"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "relay example:", err)
		os.Exit(1)
	}
}

// run relays until ctx is done (or, with -once, until nothing is due),
// then prints what the relay did.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	db := fs.String("db", os.Getenv("TXINBOX_DB"), "the inbox database: a postgres:// URL or a SQLite file (default $TXINBOX_DB)")
	url := fs.String("url", "", "the endpoint that receives one POST per row")
	ordered := fs.Bool("ordered", false, "send the rows of one key one at a time, in order")
	once := fs.Bool("once", false, "send what is due now and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *db == "" || *url == "" {
		return errors.New("-db and -url are required")
	}
	store, closeStore, err := openOutbox(ctx, *db)
	if err != nil {
		return err
	}
	defer closeStore()
	target, err := outboxhttp.New(outboxhttp.Config{URL: *url})
	if err != nil {
		return err
	}
	relay, err := outbox.New(store, outbox.Config{Target: target, Ordered: *ordered,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	if *once {
		_, err = relay.RunOnce(ctx)
	} else {
		err = relay.Run(ctx)
	}
	c := relay.Counters()
	fmt.Fprintf(out, "sent %d, retrying %d, failed for good %d\n", c.Sent, c.Retried, c.Failed)
	return err
}

// openOutbox opens the outbox of the inbox database at db. The tables are
// the consumer's (its driver's Migrate creates them).
func openOutbox(ctx context.Context, db string) (outbox.Store, func(), error) {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		pool, err := pgxpool.New(ctx, db)
		if err != nil {
			return nil, nil, err
		}
		d, err := pgstore.New(pool, pgstore.Options{})
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return outboxpg.New(d), pool.Close, nil
	}
	d, err := sqlitestore.Open(db, sqlitestore.Options{})
	if err != nil {
		return nil, nil, err
	}
	return outboxlite.New(d), func() { d.Close() }, nil
}
