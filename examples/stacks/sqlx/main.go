// Command sqlx is txinbox with sqlx on PostgreSQL: the handler wraps the
// inbox's *sql.Tx, so its write commits with the inbox row, or neither.
//
//	DATABASE_URL=postgres://localhost/billing go run ./sqlx   # processed, then duplicate
package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/jmoiron/sqlx"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// Invoice is a row of the invoices table.
type Invoice struct {
	MessageID string `db:"message_id"`
	Body      string `db:"body"`
}

// newHandler returns the handler: it writes the message's invoice with
// sqlx on the inbox's transaction.
func newHandler(xdb *sqlx.DB) txinbox.HandlerFunc[*sql.Tx] {
	return func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		stx := &sqlx.Tx{Tx: tx, Mapper: xdb.Mapper}
		// stx has no driver name, so its own named queries would bind "?":
		// bind them with xdb's (PostgreSQL's $1), then run them on stx.
		q, args, err := xdb.BindNamed(`INSERT INTO invoices (message_id, body) VALUES (:message_id, :body)`,
			Invoice{MessageID: m.ID, Body: string(m.Payload)})
		if err != nil {
			return err
		}
		_, err = stx.ExecContext(ctx, q, args...)
		return err
	}
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
	handler := newHandler(sqlx.NewDb(db, "pgx"))
	p, err := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{Scope: "sqlx-example", Handler: handler})
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
