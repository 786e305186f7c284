// Package testdb gives tests a real PostgreSQL: the DSN from
// TXINBOX_TEST_DATABASE_URL; else the cluster .ci/start-postgres starts, if
// it answers; else a throwaway cluster that the test processes of a run
// share, started from the PostgreSQL server binaries when they are
// installed (see shared.go). Each test gets a fresh schema, and a skip
// with the reason when no server can be had, except under
// TXINBOX_REQUIRE_DB=1 or CI=true (.ci/run sets both), where a missing
// server fails the test.
package testdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/txinbox/txinbox/internal/testkit"
)

// DefaultURL is the cluster that .ci/start-postgres starts.
const DefaultURL = "postgres://postgres@127.0.0.1:54329/postgres?sslmode=disable"

// resolved is the test database this process uses, found once.
var resolved struct {
	once sync.Once
	url  string
	// noShared says why no shared cluster could be started, when none
	// was.
	noShared error
}

// URL returns the test database URL: TXINBOX_TEST_DATABASE_URL, else
// DefaultURL when a server answers there, else the shared throwaway
// cluster (started on first use), else DefaultURL.
func URL() string {
	resolved.once.Do(func() {
		resolved.url = DefaultURL
		if u := os.Getenv("TXINBOX_TEST_DATABASE_URL"); u != "" {
			resolved.url = u
			return
		}
		if ping(DefaultURL) == nil {
			return
		}
		if u, err := sharedURL(); err == nil {
			resolved.url = u
		} else {
			resolved.noShared = err
		}
	})
	return resolved.url
}

// Require returns a pool on the test database, or skips (fails under
// TXINBOX_REQUIRE_DB=1 or CI=true) when none answers.
func Require(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, URL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		msg := "no PostgreSQL (install postgresql-15, set TXINBOX_TEST_DATABASE_URL or run .ci/start-postgres): "
		if resolved.noShared != nil {
			msg += "no throwaway cluster: " + resolved.noShared.Error() + "; "
		}
		msg += URL() + ": " + err.Error()
		testkit.Unavailable(t, "TXINBOX_REQUIRE_DB", msg)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewSchema creates a schema with a random name, drops it at cleanup, and
// returns its name.
func NewSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	name := testkit.RandomName("t_")
	if _, err := pool.Exec(context.Background(), "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA "+name+" CASCADE") //nolint:errcheck // best effort
	})
	return name
}

// PoolIn opens a pool whose search_path is schema, closed at cleanup.
func PoolIn(t testing.TB, schema string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	return openPool(t, URL(), schema, maxConns)
}

// openPool opens a pool on url (search_path schema unless empty, at most
// maxConns connections when positive), closed at cleanup.
func openPool(t testing.TB, url, schema string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// ping connects to url once.
func ping(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return pingCtx(ctx, url)
}

// pingCtx connects to url once, within ctx.
func pingCtx(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// Server returns the URL that URL resolves to, and an error when no server
// answers there. The test runner (internal/cmd/testall) calls it once and
// hands the URL to every test process, so that a shared throwaway cluster
// lives for the whole run.
func Server() (string, error) {
	u := URL()
	if err := ping(u); err != nil {
		if resolved.noShared != nil {
			err = fmt.Errorf("%w; no throwaway cluster: %v", err, resolved.noShared)
		}
		return u, err
	}
	return u, nil
}

// NewDatabase creates a database with a random name on the server of
// pool, drops it at cleanup (WITH (FORCE): a pooler may still hold
// connections to it), and returns its name. A test that goes through a
// connection pooler uses it instead of NewSchema: the pooler refuses a
// search_path startup parameter, and a database of its own needs none.
func NewDatabase(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	name := testkit.RandomName("t_")
	if _, err := pool.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") //nolint:errcheck // best effort
	})
	return name
}

// WithDatabase is the URL u naming the database db instead of its own.
func WithDatabase(t testing.TB, u, db string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	parsed.Path = "/" + db
	return parsed.String()
}
