package outbox_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxpg"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// openPGDB opens the outbox table of schema through pgdbstore (database/sql
// on pgx's stdlib); app names its connections.
func openPGDB(t testing.TB, schema, app string) (*outboxpg.SQLStore, *sql.DB) {
	st, sdb, err := dialPGDB(schema, app)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdb.Close() })
	return st, sdb
}

// dialPGDB is openPGDB for a child process (no testing.TB).
func dialPGDB(schema, app string) (*outboxpg.SQLStore, *sql.DB, error) {
	url := pgdbtest.URL(schema)
	if app != "" {
		url += "&application_name=" + app
	}
	sdb, err := sql.Open("pgx", url)
	if err != nil {
		return nil, nil, err
	}
	d, err := pgdbstore.New(sdb, pgdbstore.Options{})
	if err != nil {
		sdb.Close()
		return nil, nil, err
	}
	return outboxpg.NewSQL(d), sdb, nil
}

// newPGDB is newPG on database/sql: outboxpg.SQLStore, rows added in a
// *sql.Tx.
func newPGDB(t *testing.T) *db {
	schema := testdb.NewSchema(t, testdb.Require(t))
	st, sdb := openPGDB(t, schema, "")
	d, err := pgdbstore.New(sdb, pgdbstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	x := &db{kind: "pgdbstore", many: 2000, desc: schema, store: st, table: d.Tables().Outbox}
	x.open = func(t *testing.T) outbox.Store { s, _ := openPGDB(t, schema, ""); return s }
	x.openCrashable = func(t *testing.T) (outbox.Store, func()) {
		app := "crash_" + schema
		s, _ := openPGDB(t, schema, app)
		return s, func() {
			x.exec(t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app)
		}
	}
	x.tryAdd = func(es ...outbox.Entry) error {
		tx, err := sdb.Begin()
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := st.Add(context.Background(), tx, e); err != nil {
				tx.Rollback()
				return err
			}
		}
		return tx.Commit()
	}
	x.exec = func(t *testing.T, q string, args ...any) {
		t.Helper()
		if _, err := sdb.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	x.count = func(t *testing.T, where string) int {
		t.Helper()
		var n int
		if err := sdb.QueryRow("SELECT count(*) FROM " + x.table + " WHERE " + where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	x.text = func(t *testing.T, col string, id int64) string {
		t.Helper()
		var s sql.NullString
		if err := sdb.QueryRow("SELECT "+col+"::text FROM "+x.table+" WHERE id = $1", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		if !s.Valid {
			return "<nil>"
		}
		return s.String
	}
	return x
}
