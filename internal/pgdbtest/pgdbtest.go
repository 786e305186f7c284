// Package pgdbtest adapts pgdbstore to the conformance suite
// (store/storetest) for any database/sql PostgreSQL driver: the main
// module runs it on pgx's stdlib, the nested module examples/stacks on
// lib/pq (which must not enter the library's go.mod).
package pgdbtest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/sqlharness"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgdbstore"
	"github.com/txinbox/txinbox/store/storetest"
)

// URL is the test database's URL with search_path set to schema, for
// sql.Open with any driver ("" for the default search_path).
func URL(schema string) string {
	url := testdb.URL()
	if schema == "" {
		return url
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

// Open opens the test database with driverName on schema, closed at
// cleanup.
func Open(t testing.TB, driverName, schema string, maxConns int) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, URL(schema))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(maxConns)
	t.Cleanup(func() { db.Close() })
	return db
}

// Harness is the suite's harness on driverName (registered with
// database/sql by the caller's import); partitioned migrates the
// partitioned layout.
func Harness(name, driverName string, partitioned bool) storetest.Harness[*sql.Tx] {
	effect := "INSERT INTO effects (scope, message_id) SELECT scope, message_id FROM new_messages"
	if partitioned {
		effect = "" // no declarative effect on the partitioned layout
	}
	return sqlharness.Fill(storetest.Harness[*sql.Tx]{
		Name:            name,
		EffectStatement: effect,
		New: func(t *testing.T) (store.Driver[*sql.Tx], string) {
			schema := testdb.NewSchema(t, testdb.Require(t))
			db := Open(t, driverName, schema, 16)
			if _, err := db.Exec("CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			d, err := pgdbstore.New(db, pgdbstore.Options{Schema: schema, Partitioned: partitioned})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return d, schema
		},
		Open: func(ctx context.Context, desc string) (store.Driver[*sql.Tx], func(), error) {
			url, opts := openDesc(desc)
			db, err := sql.Open(driverName, url)
			if err != nil {
				return nil, nil, err
			}
			d, err := pgdbstore.New(db, opts)
			return d, func() { db.Close() }, err
		},
		SlowQuery: "SELECT pg_sleep(5)",
	}, sqlharness.Dialect{Param: sqlharness.Dollar, Key: "scope || '/' || message_id"})
}

// openDesc is the URL and options that a child process opens the inbox of
// desc with: a schema name (Harness), or a pooler's URL followed by
// "|guard" or "|noguard" (BouncerHarness).
func openDesc(desc string) (string, pgdbstore.Options) {
	if !strings.Contains(desc, "://") {
		return URL(desc), pgdbstore.Options{Schema: desc}
	}
	url, guard, _ := strings.Cut(desc, "|")
	return url, pgdbstore.Options{NoReadOnlyGuard: guard == "noguard"}
}

// BouncerHarness is Harness (not partitioned) through the PgBouncer at
// bouncerURL: each test migrates a database of its own, reached through
// the pooler by its name (the pooler refuses the search_path startup
// parameter of a schema per test), and the children open the same URL.
// guard false sets Options.NoReadOnlyGuard, as a transaction pooler
// demands (CheckPooler refuses the guard there), and with it
// WritesAfterSQLEnd: nothing then stops a handler's writes after its own
// SQL COMMIT or ROLLBACK.
func BouncerHarness(name, driverName, bouncerURL string, guard bool) storetest.Harness[*sql.Tx] {
	h := Harness(name, driverName, false)
	h.WritesAfterSQLEnd = !guard
	h.New = func(t *testing.T) (store.Driver[*sql.Tx], string) {
		desc := testdb.WithDatabase(t, bouncerURL, testdb.NewDatabase(t, testdb.Require(t))) + "|noguard"
		if guard {
			desc = strings.TrimSuffix(desc, "|noguard") + "|guard"
		}
		url, opts := openDesc(desc)
		db, err := sql.Open(driverName, url)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(16)
		t.Cleanup(func() { db.Close() })
		if _, err := db.Exec("CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		d, err := pgdbstore.New(db, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return d, desc
	}
	return h
}
