// Package stacktest holds what the tests of the examples in
// examples/stacks share: the test database (internal/testdb: a skip
// without one, a failure under TXINBOX_REQUIRE_DB=1 as in CI; MariaDB
// through internal/mysqltest, TXINBOX_REQUIRE_MYSQL=1) and the two
// checks every example passes, on its own handler: a redelivered message
// does not write twice, and a handler failing after its write rolls that
// write back together with the inbox row.
package stacktest

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"strings"
	"testing"

	"go.uber.org/goleak"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
)

// ID is the message id the examples process.
const ID = "InvoiceIssued/42"

// Open returns the test database through pgx's stdlib, on a schema of its
// own (the connections' search_path), closed at cleanup.
func Open(t testing.TB) *sql.DB {
	t.Helper()
	return pgdbtest.Open(t, "pgx", testdb.NewSchema(t, testdb.Require(t)), 4)
}

// OpenMySQL returns a MariaDB (MySQL) database of the test's own through
// mysqlstore.Open, closed and dropped at cleanup.
func OpenMySQL(t testing.TB) *sql.DB {
	t.Helper()
	return mysqltest.Open(t, mysqltest.NewDatabase(t), 4)
}

// Invoices returns how many invoices rows message id has (read without a
// placeholder, whose form differs between PostgreSQL and MySQL).
func Invoices(t *testing.T, db *sql.DB, id string) int {
	t.Helper()
	rows, err := db.Query(`SELECT message_id FROM invoices`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var got string
		if err := rows.Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == id {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// Process processes message ID with handler on driver and returns its
// result.
func Process(t *testing.T, driver store.Driver[*sql.Tx], handler txinbox.HandlerFunc[*sql.Tx]) txinbox.Result {
	t.Helper()
	p, err := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{Scope: "stacktest", Handler: handler})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Process(context.Background(), []*txinbox.Message{{ID: ID, Payload: []byte("INVOIC 42")}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// errAfterWrite is the error of a handler that fails after its write.
var errAfterWrite = errors.New("stacktest: failing after the write")

// CheckHandler checks handler, an example's handler writing one invoices
// row, on driver (migrated, with the invoices table; db is its database):
// failing after its write, it leaves no invoice and no inbox row (the
// message then processes as new); a redelivery is a duplicate that does
// not write again.
func CheckHandler(t *testing.T, db *sql.DB, driver store.Driver[*sql.Tx], handler txinbox.HandlerFunc[*sql.Tx]) {
	t.Helper()
	failing := func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		if err := handler(ctx, tx, m); err != nil {
			return err
		}
		return errAfterWrite
	}
	if r := Process(t, driver, failing); r.Outcome != txinbox.Retry || !errors.Is(r.Err, errAfterWrite) {
		t.Fatalf("failing handler: outcome %v (%v), want retry with its error", r.Outcome, r.Err)
	}
	if n := Invoices(t, db, ID); n != 0 {
		t.Fatalf("after the failing handler: %d invoices, want 0 (its write must roll back with the inbox row)", n)
	}
	for i, want := range []txinbox.Outcome{txinbox.Processed, txinbox.Duplicate} {
		if r := Process(t, driver, handler); r.Outcome != want {
			t.Fatalf("delivery %d: outcome %v (%v), want %v", i+1, r.Outcome, r.Err, want)
		}
	}
	if n := Invoices(t, db, ID); n != 1 {
		t.Fatalf("after a delivery and a redelivery: %d invoices, want 1", n)
	}
}

// VerifyMain runs the tests, then fails if a goroutine is left running
// (database/sql's connection opener of a closed *sql.DB aside).
func VerifyMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

// CheckRun runs an example's program on db: message ID processed, then a
// duplicate, and one invoice.
func CheckRun(t *testing.T, db *sql.DB, run func(context.Context, *sql.DB, io.Writer) error) {
	t.Helper()
	var out strings.Builder
	if err := run(context.Background(), db, &out); err != nil {
		t.Fatal(err)
	}
	if want := ID + ": processed\n" + ID + ": duplicate\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	if n := Invoices(t, db, ID); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}
