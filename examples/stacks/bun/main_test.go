package main

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/examples/stacks/internal/stacktest"
)

func TestMain(m *testing.M) { stacktest.VerifyMain(m) }

// TestRun runs the program: processed, then duplicate, one invoice.
func TestRun(t *testing.T) {
	stacktest.CheckRun(t, stacktest.Open(t), run)
}

// TestHandler: a failing handler rolls its Bun write back with the inbox
// row; a redelivery writes nothing.
func TestHandler(t *testing.T) {
	db := stacktest.Open(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	stacktest.CheckHandler(t, db, driver, newHandler(bun.NewDB(db, pgdialect.New())))
}

// TestRunInTxEscapes shows the trap the handler's comment names: a write
// in bdb.RunInTx inside the handler is a transaction of its own, on
// another connection: it commits although the message fails.
func TestRunInTxEscapes(t *testing.T) {
	db := stacktest.Open(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	bdb := bun.NewDB(db, pgdialect.New())
	r := stacktest.Process(t, driver, func(ctx context.Context, _ *sql.Tx, m *txinbox.Message) error {
		err := bdb.RunInTx(ctx, nil, func(ctx context.Context, btx bun.Tx) error {
			_, err := btx.NewInsert().Model(&Invoice{MessageID: m.ID, Body: "escaped"}).Exec(ctx)
			return err
		})
		return errors.Join(err, errors.New("failing after the write"))
	})
	if r.Outcome != txinbox.Retry {
		t.Fatalf("outcome %v (%v), want retry", r.Outcome, r.Err)
	}
	if n := stacktest.Invoices(t, db, stacktest.ID); n != 1 {
		t.Fatalf("%d invoices, want 1: RunInTx's write escapes the inbox's transaction", n)
	}
}
