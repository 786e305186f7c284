// Command sqlc is txinbox with sqlc's database/sql output on PostgreSQL: the
// handler's queries run on the inbox's *sql.Tx, so its write commits with the
// inbox row, or neither. ./invoicedb is sqlc's output (sqlc.yaml).
//
//	DATABASE_URL=postgres://localhost/billing go run ./sqlc   # processed, then duplicate
package main

import (
	"cmp"
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"io"
	"log"
	"os"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/examples/stacks/sqlc/invoicedb"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// newHandler returns the handler: it writes the message's invoice with
// the generated queries on the inbox's transaction. Every call goes
// through queries.WithTx(tx) (or invoicedb.New(tx)): queries alone run on
// the pool, outside the inbox's transaction.
func newHandler(queries *invoicedb.Queries) txinbox.HandlerFunc[*sql.Tx] {
	return func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		_, err := queries.WithTx(tx).CreateInvoice(ctx, invoicedb.CreateInvoiceParams{
			MessageID: m.ID, Body: string(m.Payload)})
		return err
	}
}

//go:embed schema.sql
var schema string

// setup migrates the inbox and creates the invoices table.
func setup(ctx context.Context, db *sql.DB) (*pgdbstore.Driver, error) {
	driver, err := pgdbstore.New(db, pgdbstore.Options{})
	if err == nil {
		err = driver.Migrate(ctx)
	}
	if err == nil {
		_, err = db.ExecContext(ctx, schema)
	}
	return driver, err
}

// run processes one message twice, as a broker redelivering it would.
func run(ctx context.Context, db *sql.DB, out io.Writer) error {
	driver, err := setup(ctx, db)
	if err != nil {
		return err
	}
	handler := newHandler(invoicedb.New(db))
	p, err := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{Scope: "sqlc-example", Handler: handler})
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
