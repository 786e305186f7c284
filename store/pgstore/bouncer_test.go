package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/storetest"
)

// bouncerHarness is the conformance harness through the PgBouncer at
// bouncerURL: each test migrates a database of its own, reached through
// the pooler by its name (the pooler refuses the search_path of a schema
// per test), and the children open the same URL.
func bouncerHarness(name, bouncerURL string) storetest.Harness[pgx.Tx] {
	h := newHarness(name, false, "")
	open := func(ctx context.Context, url string) (*pgstore.Driver, *pgxpool.Pool, error) {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			return nil, nil, err
		}
		cfg.MaxConns = 16
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, nil, err
		}
		d, err := pgstore.New(pool, pgstore.Options{})
		if err != nil {
			pool.Close()
		}
		return d, pool, err
	}
	h.New = func(t *testing.T) (store.Driver[pgx.Tx], string) {
		admin := testdb.Require(t)
		url := testdb.WithDatabase(t, bouncerURL, testdb.NewDatabase(t, admin))
		ctx := context.Background()
		d, pool, err := open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if _, err := pool.Exec(ctx, "CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return d, url
	}
	h.Open = func(ctx context.Context, url string) (store.Driver[pgx.Tx], func(), error) {
		d, pool, err := open(ctx, url)
		if err != nil {
			return nil, nil, err
		}
		return d, pool.Close, nil
	}
	return h
}

// TestConformanceBehindPgBouncer runs the store conformance suite through
// PgBouncer in transaction pooling (pgx's cache_describe mode, as
// .ci/start-pgbouncer's URL sets it) and in session pooling (pgx's
// default mode), crash tests with SIGKILLed child processes included.
func TestConformanceBehindPgBouncer(t *testing.T) {
	tx, session := testdb.RequirePgBouncer(t), testdb.RequirePgBouncerSession(t)
	t.Run("transaction", func(t *testing.T) { storetest.Run(t, bouncerHarness("pgstore-pgbouncer-transaction", tx)) })
	t.Run("session", func(t *testing.T) { storetest.Run(t, bouncerHarness("pgstore-pgbouncer-session", session)) })
}
