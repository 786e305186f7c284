// Package gormcheck is the check that the GORM examples (gorm,
// gormmysql) share: gdb.Transaction inside the handler is a SAVEPOINT of
// the inbox's transaction, and GORM cannot begin a transaction of its own
// on a *sql.Tx.
package gormcheck

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/examples/stacks/internal/stacktest"
	"github.com/txinbox/txinbox/store"
)

// Open opens GORM on the inbox's transaction, as an example's handler does.
type Open func(tx *sql.Tx, cfg *gorm.Config) (*gorm.DB, error)

// invoice is a row of the examples' invoices table.
type invoice struct {
	ID        int64
	MessageID string
	Body      string
}

// nested writes "outer", then "inner" and "undone" each in a
// gdb.Transaction, the second failing, checks that gdb.Begin fails, then
// returns last. It opens GORM with its default transaction on
// (SkipDefaultTransaction false).
func nested(open Open, last error) txinbox.HandlerFunc[*sql.Tx] {
	return func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		gdb, err := open(tx, &gorm.Config{})
		if err != nil {
			return err
		}
		gdb = gdb.WithContext(ctx)
		write := func(body string, then error) func(*gorm.DB) error {
			return func(g *gorm.DB) error {
				if err := g.Table("invoices").Create(&invoice{MessageID: m.ID, Body: body}).Error; err != nil {
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

// CheckNested runs the nested handler on driver (migrated, with the
// invoices table; db is its database): failing at its end, none of its
// writes stay; succeeding, "outer" and "inner" commit with the inbox row
// and the failed nested transaction's "undone" does not.
func CheckNested(t *testing.T, db *sql.DB, driver store.Driver[*sql.Tx], open Open) {
	t.Helper()
	if r := stacktest.Process(t, driver, nested(open, errors.New("after"))); r.Outcome != txinbox.Retry {
		t.Fatalf("failing: outcome %v (%v), want retry", r.Outcome, r.Err)
	}
	if n := stacktest.Invoices(t, db, stacktest.ID); n != 0 {
		t.Fatalf("failing: %d invoices, want 0", n)
	}
	if r := stacktest.Process(t, driver, nested(open, nil)); r.Outcome != txinbox.Processed {
		t.Fatalf("outcome %v (%v), want processed", r.Outcome, r.Err)
	}
	rows, err := db.Query(`SELECT body FROM invoices ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var bodies []string
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(bodies, ","); got != "outer,inner" {
		t.Fatalf("invoices %q, want \"outer,inner\"", got)
	}
}
