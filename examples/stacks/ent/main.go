// Command ent is txinbox with ent on PostgreSQL: the handler's client runs on
// the inbox's *sql.Tx, so its write commits with the inbox row, or neither.
// ./ent is generated from ./ent/schema (go generate ./ent/ent).
//
//	DATABASE_URL=postgres://localhost/billing go run ./ent   # processed, then duplicate
package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/examples/stacks/ent/ent"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// txClient returns an ent client whose every query runs on tx. It is
// transactional already: its client.Tx panics (ent's driver begins on a
// *sql.DB only).
func txClient(tx *sql.Tx) *ent.Client {
	return ent.NewClient(ent.Driver(entsql.NewDriver(dialect.Postgres, entsql.Conn{ExecQuerier: tx})))
}

// handle writes the message's invoice with ent on the inbox's transaction.
func handle(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
	_, err := txClient(tx).Invoice.Create().SetMessageID(m.ID).SetBody(string(m.Payload)).Save(ctx)
	return err
}

// setup migrates the inbox and creates the invoices table.
func setup(ctx context.Context, db *sql.DB) (*pgdbstore.Driver, error) {
	driver, err := pgdbstore.New(db, pgdbstore.Options{})
	if err == nil {
		err = driver.Migrate(ctx)
	}
	if err == nil {
		_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS invoices (
			id bigserial PRIMARY KEY, message_id text NOT NULL, body text NOT NULL)`)
	}
	return driver, err
}

// run processes one message twice, as a broker redelivering it would.
func run(ctx context.Context, db *sql.DB, out io.Writer) error {
	driver, err := setup(ctx, db)
	if err != nil {
		return err
	}
	p, err := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{Scope: "ent-example", Handler: handle})
	if err != nil {
		return err
	}
	msg := &txinbox.Message{ID: "InvoiceIssued/42", Payload: []byte("INVOIC 42")}
	for range 2 {
		res, err := p.Process(ctx, []*txinbox.Message{msg})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s\n", msg.ID, res[0].Outcome) // ack the broker when res[0].Outcome.Ack()
	}
	return nil
}

func main() {
	db, err := sql.Open("pgx", cmp.Or(os.Getenv("DATABASE_URL"), "postgres://localhost/billing"))
	if err == nil {
		err = run(context.Background(), db, os.Stdout)
	}
	if err != nil {
		log.Fatal(err)
	}
}
