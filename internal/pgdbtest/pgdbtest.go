// Package pgdbtest adapts pgdbstore to the conformance suite
// (store/storetest) for any database/sql PostgreSQL driver: the main
// module runs it on pgx's stdlib, the nested module examples/stacks on
// lib/pq (which must not enter the library's go.mod).
package pgdbtest

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

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
	return storetest.Harness[*sql.Tx]{
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
		Open: func(ctx context.Context, schema string) (store.Driver[*sql.Tx], func(), error) {
			db, err := sql.Open(driverName, URL(schema))
			if err != nil {
				return nil, nil, err
			}
			d, err := pgdbstore.New(db, pgdbstore.Options{Schema: schema})
			return d, func() { db.Close() }, err
		},
		InsertEffect: func(ctx context.Context, tx *sql.Tx, scope, id string) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO effects (scope, message_id) VALUES ($1, $2)", scope, id)
			return err
		},
		Effects: func(t *testing.T, d store.Driver[*sql.Tx]) map[string]int {
			rows, err := d.(*pgdbstore.Driver).DB().Query("SELECT scope || '/' || message_id, count(*) FROM effects GROUP BY 1")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			out := map[string]int{}
			for rows.Next() {
				var k string
				var n int
				if err := rows.Scan(&k, &n); err != nil {
					t.Fatal(err)
				}
				out[k] = n
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return out
		},
		Exec: func(ctx context.Context, tx *sql.Tx, query string) error {
			_, err := tx.ExecContext(ctx, query)
			return err
		},
		Commit:    func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		Rollback:  func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
		SlowQuery: "SELECT pg_sleep(5)",
		InboxPayloadHash: func(t *testing.T, d store.Driver[*sql.Tx], scope, id string) []byte {
			pd := d.(*pgdbstore.Driver)
			var h []byte
			err := pd.DB().QueryRow(pd.Tables().Expand("SELECT payload_hash FROM {inbox} WHERE scope = $1 AND message_id = $2"), scope, id).Scan(&h)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			return h
		},
	}
}
