package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/examples/stacks/internal/stacktest"
)

func TestMain(m *testing.M) { stacktest.VerifyMain(m) }

// TestRun runs the program: processed, then duplicate, one invoice.
func TestRun(t *testing.T) {
	stacktest.CheckRun(t, stacktest.Open(t), run)
}

// TestHandler: a failing handler rolls its sqlx write back with the inbox
// row; a redelivery writes nothing.
func TestHandler(t *testing.T) {
	db := stacktest.Open(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	stacktest.CheckHandler(t, db, driver, newHandler(sqlx.NewDb(db, "pgx")))
}

// TestNamedOnLiteralTx shows the trap the handler avoids: the named
// queries of a sqlx.Tx made as a literal bind "?", which PostgreSQL
// refuses; the message fails alone (retry) and nothing is written.
func TestNamedOnLiteralTx(t *testing.T) {
	db := stacktest.Open(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	xdb := sqlx.NewDb(db, "pgx")
	r := stacktest.Process(t, driver, func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		stx := &sqlx.Tx{Tx: tx, Mapper: xdb.Mapper} // without the Mapper, it panics instead
		_, err := stx.NamedExecContext(ctx, `INSERT INTO invoices (message_id, body) VALUES (:message_id, :body)`,
			Invoice{MessageID: m.ID, Body: "x"})
		return err
	})
	if r.Outcome != txinbox.Retry || r.Err == nil || !strings.Contains(r.Err.Error(), "syntax error") {
		t.Fatalf("outcome %v (%v), want retry with a syntax error", r.Outcome, r.Err)
	}
	if n := stacktest.Invoices(t, db, stacktest.ID); n != 0 {
		t.Fatalf("%d invoices, want 0", n)
	}
}
