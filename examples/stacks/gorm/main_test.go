package main

import (
	"context"
	"database/sql"
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/txinbox/txinbox/examples/stacks/internal/gormcheck"
	"github.com/txinbox/txinbox/examples/stacks/internal/stacktest"
)

func TestMain(m *testing.M) { stacktest.VerifyMain(m) }

// TestRun runs the program: processed, then duplicate, one invoice.
func TestRun(t *testing.T) {
	stacktest.CheckRun(t, stacktest.Open(t), run)
}

// TestHandler: a failing handler rolls its GORM write back with the inbox
// row; a redelivery writes nothing.
func TestHandler(t *testing.T) {
	db := stacktest.Open(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	stacktest.CheckHandler(t, db, driver, handle)
}

// TestNestedTransaction: gdb.Transaction inside the handler is a SAVEPOINT
// of the inbox's transaction (its writes roll back with the inbox row; its
// failure undoes its own writes only), and GORM's default transaction is
// none on a *sql.Tx (GORM cannot begin one there and writes in tx).
func TestNestedTransaction(t *testing.T) {
	db := stacktest.Open(t)
	driver, err := setup(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	gormcheck.CheckNested(t, db, driver, func(tx *sql.Tx, cfg *gorm.Config) (*gorm.DB, error) {
		return gorm.Open(postgres.New(postgres.Config{Conn: tx}), cfg)
	})
}

// BenchmarkOpenOnTx is what the handler's gorm.Open costs per message
// (GORM opens on the *sql.Tx without a round trip).
func BenchmarkOpenOnTx(b *testing.B) {
	db := stacktest.Open(b)
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gorm.Open(postgres.New(postgres.Config{Conn: tx}), &gorm.Config{SkipDefaultTransaction: true}); err != nil {
			b.Fatal(err)
		}
	}
}
