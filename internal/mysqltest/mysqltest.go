// Package mysqltest gives tests a real MySQL or MariaDB: the URL from
// TXINBOX_TEST_MYSQL_URL (else TXINBOX_MYSQL_URL, its older name), else the server .ci/start-mariadb starts, if it
// answers. Each test gets a database of its own, dropped at cleanup, and
// a skip with the reason when no server answers, except under
// TXINBOX_REQUIRE_MYSQL=1 or CI=true (set by .ci/run), where a missing
// server fails the test. It also adapts mysqlstore to the conformance
// suite (Harness).
package mysqltest

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/sqlharness"
	"github.com/txinbox/txinbox/internal/testkit"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
	"github.com/txinbox/txinbox/store/storetest"
)

// DefaultURL is the server that .ci/start-mariadb starts.
const DefaultURL = "mysql://root@127.0.0.1:33306/txinbox"

// Env names the test server's URL.
const Env = "TXINBOX_TEST_MYSQL_URL"

// URL returns Env (else TXINBOX_MYSQL_URL, its older name, read until
// every branch uses the new one), else DefaultURL.
func URL() string {
	if u := testkit.Getenv(Env, "TXINBOX_MYSQL_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Require returns the server's URL, or skips (fails under
// TXINBOX_REQUIRE_MYSQL=1 or CI=true) when it does not answer.
func Require(t testing.TB) string {
	t.Helper()
	db, err := mysqlstore.Open(URL())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = db.PingContext(ctx)
		cancel()
		db.Close()
	}
	if err != nil {
		testkit.Unavailable(t, "TXINBOX_REQUIRE_MYSQL", "no MySQL or MariaDB (run .ci/start-mariadb or set "+Env+"): "+URL()+": "+err.Error())
	}
	return URL()
}

// WithDatabase is url naming database name instead.
func WithDatabase(url, name string) string {
	base, query, _ := strings.Cut(url, "?")
	i := strings.LastIndex(base, "/")
	if strings.HasPrefix(base, "mysql://") && i < len("mysql://") {
		base += "/"
		i = len(base) - 1
	}
	out := base[:i+1] + name
	if query != "" {
		out += "?" + query
	}
	return out
}

// NewDatabase creates a database of its own for the test, dropped at
// cleanup, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	url := Require(t)
	name := testkit.RandomName("txinbox_t_")
	admin, err := mysqlstore.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP DATABASE " + name)
		admin.Close()
	})
	return WithDatabase(url, name)
}

// Open opens url, closed at cleanup.
func Open(t testing.TB, url string, maxConns int) *sql.DB {
	t.Helper()
	db, err := mysqlstore.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(maxConns)
	t.Cleanup(func() { db.Close() })
	return db
}

// Harness is the suite's harness on the MySQL store.
func Harness(name string) storetest.Harness[*sql.Tx] {
	return sqlharness.Fill(storetest.Harness[*sql.Tx]{
		Name:            name,
		EffectStatement: "INSERT INTO effects (scope, message_id) SELECT scope, message_id FROM new_messages",
		New: func(t *testing.T) (store.Driver[*sql.Tx], string) {
			url := NewDatabase(t)
			db := Open(t, url, 16)
			if _, err := db.Exec("CREATE TABLE effects (scope VARBINARY(1024) NOT NULL, message_id VARBINARY(2048) NOT NULL) ENGINE=InnoDB"); err != nil {
				t.Fatal(err)
			}
			d, err := mysqlstore.New(db, mysqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return d, url
		},
		Open: func(ctx context.Context, url string) (store.Driver[*sql.Tx], func(), error) {
			db, err := mysqlstore.Open(url)
			if err != nil {
				return nil, nil, err
			}
			d, err := mysqlstore.New(db, mysqlstore.Options{})
			return d, func() { db.Close() }, err
		},
		SlowQuery: "SELECT SLEEP(5)",
	}, sqlharness.Dialect{Param: sqlharness.Question, Key: "CONCAT(scope, '/', message_id)"})
}
