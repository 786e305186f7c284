package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/examples/stacks/internal/stacktest"
	"github.com/txinbox/txinbox/examples/stacks/sqlc/invoicedb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

// TestRun runs the program: processed, then duplicate, one invoice.
func TestRun(t *testing.T) {
	db := stacktest.Open(t)
	var out strings.Builder
	if err := run(context.Background(), db, &out); err != nil {
		t.Fatal(err)
	}
	if want := "InvoiceIssued/42: processed\nInvoiceIssued/42: duplicate\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	if n := stacktest.Invoices(t, db, stacktest.ID); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}

// TestHandler: a failing handler rolls its sqlc write back with the inbox
// row; a redelivery writes nothing.
func TestHandler(t *testing.T) {
	db := stacktest.Open(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	stacktest.CheckHandler(t, db, driver, newHandler(invoicedb.New(db)))
}
