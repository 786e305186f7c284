package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/examples/stacks/internal/gormcheck"
	"github.com/txinbox/txinbox/examples/stacks/internal/stacktest"
)

func TestMain(m *testing.M) { stacktest.VerifyMain(m) }

// TestRun runs the program on MariaDB: processed, then duplicate, one
// invoice.
func TestRun(t *testing.T) {
	stacktest.CheckRun(t, stacktest.OpenMySQL(t), run)
}

// TestHandler: a failing handler rolls its GORM write back with the inbox
// row; a redelivery writes nothing.
func TestHandler(t *testing.T) {
	db := stacktest.OpenMySQL(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	stacktest.CheckHandler(t, db, driver, handle)
}

// TestNestedTransaction: on MariaDB, gdb.Transaction inside the handler is
// a SAVEPOINT of the inbox's transaction (its writes roll back with the
// inbox row; its failure undoes its own writes only), and GORM cannot
// begin a transaction of its own on a *sql.Tx.
func TestNestedTransaction(t *testing.T) {
	db := stacktest.OpenMySQL(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	gormcheck.CheckNested(t, db, driver, openGORM)
}

// TestCommitThroughGORM: a handler that sends COMMIT through GORM and
// swallows the error would, on a plain MySQL transaction, commit the inbox
// row with its write. Inside the batch's XA transaction the server refuses
// the COMMIT (1399); txinbox fails the message anyway (its work rolled
// back), and the next delivery processes it once.
func TestCommitThroughGORM(t *testing.T) {
	db := stacktest.OpenMySQL(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var refused error
	swallows := func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		gdb, err := openGORM(tx, &gorm.Config{SkipDefaultTransaction: true})
		if err != nil {
			return err
		}
		gdb = gdb.WithContext(ctx)
		if err := gdb.Create(&Invoice{MessageID: m.ID, Body: "before COMMIT"}).Error; err != nil {
			return err
		}
		refused = gdb.Exec("COMMIT").Error
		return gdb.Create(&Invoice{MessageID: m.ID, Body: "after COMMIT"}).Error
	}
	r := stacktest.Process(t, driver, swallows)
	if refused == nil || !strings.Contains(refused.Error(), "1399") {
		t.Fatalf("COMMIT through GORM: %v, want the server's refusal (1399)", refused)
	}
	if r.Outcome != txinbox.Retry {
		t.Fatalf("outcome %v (%v), want retry", r.Outcome, r.Err)
	}
	if n := stacktest.Invoices(t, db, stacktest.ID); n != 0 {
		t.Fatalf("%d invoices after the refused COMMIT, want 0", n)
	}
	if r := stacktest.Process(t, driver, handle); r.Outcome != txinbox.Processed {
		t.Fatalf("redelivery: outcome %v (%v), want processed", r.Outcome, r.Err)
	}
	if n := stacktest.Invoices(t, db, stacktest.ID); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}
