package pgdbstore_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// openBouncer opens pgx's stdlib on a database of its own behind the
// PgBouncer at u (the pooler refuses a search_path: no schema).
func openBouncer(t *testing.T, u string) *sql.DB {
	t.Helper()
	name := testdb.NewDatabase(t, testdb.Require(t))
	db, err := sql.Open("pgx", testdb.WithDatabase(t, u, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestCheckPoolerTransactionPool: behind PgBouncer's transaction pool,
// CheckPooler finds it and Migrate refuses the read-only guard, naming
// txinbox_readonly_guard=off and Options.NoReadOnlyGuard, before creating
// anything; with the guard off, Migrate and a batch work.
func TestCheckPoolerTransactionPool(t *testing.T) {
	ctx := context.Background()
	db := openBouncer(t, testdb.RequirePgBouncer(t))
	d, err := pgdbstore.New(db, pgdbstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.CheckPooler(ctx)
	if !p.Transaction || !p.Pooled {
		t.Errorf("CheckPooler = %+v; want a transaction pooler", p)
	}
	var pe *pgdbstore.PoolerError
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "pgdbstore: ") || !strings.Contains(err.Error(), "txinbox_readonly_guard=off") ||
		!strings.Contains(err.Error(), "Options.NoReadOnlyGuard") {
		t.Fatalf("CheckPooler error = %v; want a *PoolerError from pgdbstore naming txinbox_readonly_guard=off and Options.NoReadOnlyGuard", err)
	}
	if err := d.Migrate(ctx); !errors.As(err, &pe) {
		t.Fatalf("Migrate = %v; want the *PoolerError", err)
	}
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'txinbox_%'").Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("after the refused Migrate: %d txinbox tables, %v; want none", tables, err)
	}

	d, err = pgdbstore.New(db, pgdbstore.Options{NoReadOnlyGuard: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatalf("Migrate with NoReadOnlyGuard: %v", err)
	}
	proc, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s", Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := proc.Process(ctx, []*txinbox.Message{{ID: "a", Payload: []byte("A")}})
	if err != nil || res[0].Outcome != txinbox.Processed {
		t.Fatalf("Process = %+v, %v; want Processed", res, err)
	}
}

// TestCheckPoolerOthers: directly, CheckPooler finds no pooler; behind
// PgBouncer's session pool, a pooler that pools sessions; neither refuses
// the read-only guard.
func TestCheckPoolerOthers(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		db   func(t *testing.T) *sql.DB
		want pgdbstore.Pooling
	}{
		{"Direct", func(t *testing.T) *sql.DB { return openBouncer(t, testdb.URL()) }, pgdbstore.Pooling{}},
		{"SessionPool", func(t *testing.T) *sql.DB { return openBouncer(t, testdb.RequirePgBouncerSession(t)) }, pgdbstore.Pooling{Pooled: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := pgdbstore.New(c.db(t), pgdbstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if p, err := d.CheckPooler(ctx); p != c.want || err != nil {
				t.Errorf("CheckPooler = %+v, %v; want %+v", p, err, c.want)
			}
			if err := d.Migrate(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestCheckPoolerExecMode: behind the transaction pool, pgx's stdlib with
// pgx's default exec mode (cache_statement) is refused as pgstore refuses
// it, also with the read-only guard off.
func TestCheckPoolerExecMode(t *testing.T) {
	u := strings.Replace(testdb.RequirePgBouncer(t), "default_query_exec_mode=cache_describe", "default_query_exec_mode=cache_statement", 1)
	if !strings.Contains(u, "cache_statement") {
		t.Skip("TXINBOX_TEST_PGBOUNCER_URL names no default_query_exec_mode=cache_describe")
	}
	d, err := pgdbstore.New(openBouncer(t, u), pgdbstore.Options{NoReadOnlyGuard: true})
	if err != nil {
		t.Fatal(err)
	}
	var pe *pgdbstore.PoolerError
	if _, err := d.CheckPooler(context.Background()); !errors.As(err, &pe) || !strings.Contains(pe.Setting, "cache_statement") ||
		!strings.HasPrefix(err.Error(), "pgdbstore: ") {
		t.Fatalf("CheckPooler = %v; want a *PoolerError from pgdbstore naming cache_statement", err)
	}
}
