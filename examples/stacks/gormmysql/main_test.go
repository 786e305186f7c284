package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"gorm.io/gorm"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/examples/stacks/internal/stacktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

// TestRun runs the program on MariaDB: processed, then duplicate, one
// invoice.
func TestRun(t *testing.T) {
	db := stacktest.OpenMySQL(t)
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

// nested writes "outer", then "inner" and "undone" each in a
// gdb.Transaction, the second failing, checks that gdb.Begin fails and
// then returns last. GORM's default transaction is on.
func nested(last error) txinbox.HandlerFunc[*sql.Tx] {
	return func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		gdb, err := openGORM(tx, &gorm.Config{})
		if err != nil {
			return err
		}
		gdb = gdb.WithContext(ctx)
		write := func(body string, then error) func(*gorm.DB) error {
			return func(g *gorm.DB) error {
				if err := g.Create(&Invoice{MessageID: m.ID, Body: body}).Error; err != nil {
					return err
				}
				return then
			}
		}
		errUndone := errors.New("undone")
		if err := write("outer", nil)(gdb); err != nil {
			return err
		}
		if err := gdb.Transaction(write("inner", nil)); err != nil {
			return err
		}
		if err := gdb.Transaction(write("undone", errUndone)); !errors.Is(err, errUndone) {
			return fmt.Errorf("nested transaction: %v, want %v", err, errUndone)
		}
		if err := gdb.Begin().Error; !errors.Is(err, gorm.ErrInvalidTransaction) {
			return fmt.Errorf("gdb.Begin on a *sql.Tx: %v, want %v", err, gorm.ErrInvalidTransaction)
		}
		return last
	}
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
	if r := stacktest.Process(t, driver, nested(errors.New("after"))); r.Outcome != txinbox.Retry {
		t.Fatalf("failing: outcome %v (%v), want retry", r.Outcome, r.Err)
	}
	if n := stacktest.Invoices(t, db, stacktest.ID); n != 0 {
		t.Fatalf("failing: %d invoices, want 0", n)
	}
	if r := stacktest.Process(t, driver, nested(nil)); r.Outcome != txinbox.Processed {
		t.Fatalf("outcome %v (%v), want processed", r.Outcome, r.Err)
	}
	var bodies string
	if err := db.QueryRow(`SELECT GROUP_CONCAT(body ORDER BY id) FROM invoices`).Scan(&bodies); err != nil {
		t.Fatal(err)
	}
	if bodies != "outer,inner" {
		t.Fatalf("invoices %q, want \"outer,inner\"", bodies)
	}
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
