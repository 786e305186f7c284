// Command bun is txinbox with Bun on PostgreSQL: the handler's queries run on
// the inbox's *sql.Tx, so its write commits with the inbox row, or neither.
//
//	DATABASE_URL=postgres://localhost/billing go run ./bun   # processed, then duplicate
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
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// Invoice is a row of the invoices table.
type Invoice struct {
	ID        int64 `bun:",pk,autoincrement"`
	MessageID string
	Body      string
}

// newHandler returns the handler: it writes the message's invoice with Bun
// on the inbox's transaction. Every query needs .Conn(tx): without it, it
// runs on bdb's pool, outside the inbox's transaction (so does
// bdb.RunInTx).
func newHandler(bdb *bun.DB) txinbox.HandlerFunc[*sql.Tx] {
	return func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		inv := &Invoice{MessageID: m.ID, Body: string(m.Payload)}
		_, err := bdb.NewInsert().Conn(tx).Model(inv).Exec(ctx)
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
	handler := newHandler(bun.NewDB(db, pgdialect.New()))
	p, err := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{Scope: "bun-example", Handler: handler})
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
