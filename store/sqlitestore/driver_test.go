package sqlitestore_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"modernc.org/sqlite"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// wrappedDriver is modernc.org/sqlite's driver under a type of the
// application's: its connections are modernc's, with the commit hook.
type wrappedDriver struct{ *sqlite.Driver }

// hooklessDriver opens connections that have no commit hook: a SQLite
// driver other than modernc.org/sqlite, as the store sees it.
type hooklessDriver struct{}

func (hooklessDriver) Open(string) (driver.Conn, error) { return hooklessConn{}, nil }

type hooklessConn struct{}

func (hooklessConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("hookless: no statements")
}
func (hooklessConn) Close() error              { return nil }
func (hooklessConn) Begin() (driver.Tx, error) { return nil, errors.New("hookless: no transactions") }

func init() {
	sql.Register("txinbox-wrapped-sqlite", wrappedDriver{&sqlite.Driver{}})
	sql.Register("txinbox-hookless", hooklessDriver{})
}

// TestNewRefusesPostgreSQL: a PostgreSQL *sql.DB (pgx's stdlib driver, on
// the test server) is refused by New with an error that names pgstore,
// not accepted to fail later in Migrate and Begin.
func TestNewRefusesPostgreSQL(t *testing.T) {
	testdb.Require(t) // the server answers: the *sql.DB below is a working one
	db, err := sql.Open("pgx", testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	d, err := sqlitestore.New(db, sqlitestore.Options{})
	if err == nil {
		t.Fatalf("New(PostgreSQL *sql.DB) = %v, nil; want an error", d)
	}
	for _, want := range []string{"PostgreSQL", "*stdlib.Driver", "pgstore.New", "pgxpool.Pool"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestNewDrivers: modernc.org/sqlite's *sql.DB is accepted and works, also
// under a driver type of the application's; a driver whose connections
// lack the commit hook is refused at New, not at the first Begin.
func TestNewDrivers(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"sqlite", "txinbox-wrapped-sqlite"} {
		t.Run(name, func(t *testing.T) {
			db, err := sql.Open(name, "file:"+filepath.Join(t.TempDir(), "inbox.db")+"?_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			d, err := sqlitestore.New(db, sqlitestore.Options{})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if err := d.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			tx, err := d.Begin(ctx)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("hookless", func(t *testing.T) {
		db, err := sql.Open("txinbox-hookless", "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, err = sqlitestore.New(db, sqlitestore.Options{})
		if err == nil || !strings.Contains(err.Error(), "not modernc.org/sqlite's") || !strings.Contains(err.Error(), "sqlitestore.Open") {
			t.Fatalf("New(hookless driver) = %v; want it refused, naming sqlitestore.Open", err)
		}
	})
}
