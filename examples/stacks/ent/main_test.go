package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/examples/stacks/internal/stacktest"
)

func TestMain(m *testing.M) { stacktest.VerifyMain(m) }

// TestRun runs the program: processed, then duplicate, one invoice.
func TestRun(t *testing.T) {
	stacktest.CheckRun(t, stacktest.Open(t), run)
}

// TestHandler: a failing handler rolls its ent write back with the inbox
// row; a redelivery writes nothing.
func TestHandler(t *testing.T) {
	db := stacktest.Open(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	stacktest.CheckHandler(t, db, driver, handle)
}

// TestClientTx shows the trap txClient's comment names: client.Tx on the
// client over the inbox's transaction panics; the processor fails the
// message alone (retry) and its write before that rolls back.
func TestClientTx(t *testing.T) {
	db := stacktest.Open(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	r := stacktest.Process(t, driver, func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		if err := handle(ctx, tx, m); err != nil {
			return err
		}
		_, err := txClient(tx).Tx(ctx)
		return err
	})
	if r.Outcome != txinbox.Retry || r.Err == nil || !strings.Contains(r.Err.Error(), "panicked") {
		t.Fatalf("outcome %v (%v), want retry after a panic", r.Outcome, r.Err)
	}
	if n := stacktest.Invoices(t, db, stacktest.ID); n != 0 {
		t.Fatalf("%d invoices, want 0", n)
	}
}
