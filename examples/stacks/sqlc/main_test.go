package main

import (
	"context"
	"testing"

	"github.com/txinbox/txinbox/examples/stacks/internal/stacktest"
	"github.com/txinbox/txinbox/examples/stacks/sqlc/invoicedb"
)

func TestMain(m *testing.M) { stacktest.VerifyMain(m) }

// TestRun runs the program: processed, then duplicate, one invoice.
func TestRun(t *testing.T) {
	stacktest.CheckRun(t, stacktest.Open(t), run)
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
