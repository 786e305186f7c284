// Package pgdbstore is the PostgreSQL store of txinbox over database/sql:
// handlers receive a *sql.Tx, so that the business writes of a service on
// GORM, sqlx, ent, Bun or sqlc's database/sql output go into the inbox's
// transaction. It runs on any database/sql PostgreSQL driver: pgx's stdlib
// (github.com/jackc/pgx/v5/stdlib, "pgx") or lib/pq ("postgres").
//
//	db, _ := sql.Open("pgx", "postgres://...")
//	driver, _ := pgdbstore.New(db, pgdbstore.Options{})
//	_ = driver.Migrate(ctx)
//	p, _ := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{Scope: "billing", Handler: ...})
//
// Its tables, migrations and SQL are pgstore's (store/internal/pgcore):
// one database can be served by both stores, at once. What database/sql
// cannot do, and what happens instead, is listed under "Guards" in
// docs/pgdbstore.md: the batch transaction costs two round trips more
// than pgstore's (BEGIN and the commit guard's setting travel on their
// own), and the read-only guard (a handler that ends its transaction
// with COMMIT or ROLLBACK as SQL cannot write on its own afterwards) one
// or two more (Options.NoReadOnlyGuard).
package pgdbstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
	"github.com/txinbox/txinbox/store/internal/sqldb"
	"github.com/txinbox/txinbox/store/schema"
)

// Options configures a Driver.
type Options struct {
	// Schema holds the inbox tables; Migrate creates it if missing.
	// Defaults to none: table names are unqualified and resolve through
	// the connection's search_path (usually "public").
	Schema string
	// TablePrefix is prepended to every table name. Defaults to "txinbox_".
	TablePrefix string
	// Partitioned makes the first Migrate create the inbox table
	// partitioned by period, as pgstore.Options.Partitioned does (the
	// layout is read back from the database afterwards). Defaults to false.
	Partitioned bool
	// PartitionPeriod is how long one partition receives new rows
	// (pgstore.Options.PartitionPeriod). Defaults to 7 days; at least one
	// minute.
	PartitionPeriod time.Duration
	// NoReadOnlyGuard turns off the read-only guard (docs/pgdbstore.md):
	// a handler that ends its transaction with COMMIT or ROLLBACK as SQL
	// and goes on writing then writes in autocommit mode, and every batch
	// transaction costs one or two round trips less. Set it behind a
	// transaction pooler (PgBouncer's pool_mode=transaction), where a
	// session setting reaches other clients' transactions: the guard
	// must be off there. Defaults to false (guarded).
	NoReadOnlyGuard bool
}

// core is the code pgdbstore shares with pgstore (store/internal/pgcore):
// the admin, purge and partition methods of Driver are its own.
type core = pgcore.Core

// Driver is a store.Driver[*sql.Tx] on a database/sql PostgreSQL database.
type Driver struct {
	*core
	db   *sql.DB
	t    schema.Tables
	q    *pgcore.Queries
	opts Options
	// session is what a batch does around its transaction: the
	// read-only guard (roguard.go), unless Options.NoReadOnlyGuard.
	session sqldb.Session
}

var (
	_ store.Driver[*sql.Tx] = (*Driver)(nil)
	_ store.Admin           = (*Driver)(nil)
	_ store.Refuser         = (*Driver)(nil)
	_ store.Pinger          = (*Driver)(nil)
	_ store.Purger          = (*Driver)(nil)
	_ store.GaugeReader     = (*Driver)(nil)
	_ store.Timeline        = (*Driver)(nil)
)

// New returns a Driver on db, a PostgreSQL database opened with any
// database/sql driver. Schema and TablePrefix must be plain identifiers
// (lower-case letters, digits, underscores).
func New(db *sql.DB, opts Options) (*Driver, error) {
	if db == nil {
		return nil, errors.New("pgdbstore: New: db is nil")
	}
	if err := checkDriver(db.Driver()); err != nil {
		return nil, err
	}
	co := pgcore.Options{Name: "pgdbstore", Schema: opts.Schema, TablePrefix: opts.TablePrefix,
		Partitioned: opts.Partitioned, PartitionPeriod: opts.PartitionPeriod}
	if err := pgcore.Validate(&co); err != nil {
		return nil, err
	}
	opts.TablePrefix, opts.PartitionPeriod = co.TablePrefix, co.PartitionPeriod
	c := pgcore.New(sqlDB{db}, co)
	q := pgcore.QueriesOf(c)
	q.MarkGuard()
	d := &Driver{core: c, db: db, t: c.Tables(), q: q, opts: opts}
	if !opts.NoReadOnlyGuard {
		d.session = sqldb.Session{Before: []string{guardOn}, Reset: guardOff}
		if !saysReadWrite(db.Driver()) {
			d.session.After = []string{readWrite}
		}
	}
	return d, nil
}

// notPostgres are the import paths of database/sql drivers of other
// databases that a user may hand to New by mistake, and the store to use.
var notPostgres = map[string]string{
	"modernc.org/sqlite":                          "sqlitestore",
	"github.com/mattn/go-sqlite3":                 "sqlitestore",
	"github.com/go-sql-driver/mysql":              "mysqlstore, on mysqlstore.Open",
	"github.com/txinbox/txinbox/store/mysqlstore": "mysqlstore",
}

// checkDriver refuses a driver of another database by its package, without
// connecting; any other driver is taken for PostgreSQL (Migrate and Begin
// fail on anything else).
func checkDriver(drv driver.Driver) error {
	t := reflect.TypeOf(drv)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for pkg, use := range notPostgres {
		if strings.HasPrefix(t.PkgPath(), pkg) {
			return fmt.Errorf("pgdbstore: New: the *sql.DB's driver %T is not PostgreSQL's (use %s); "+
				"open PostgreSQL with pgx's stdlib (sql.Open(\"pgx\", url)) or lib/pq (sql.Open(\"postgres\", url))", drv, use)
		}
	}
	return nil
}

// DB returns the driver's database handle.
func (d *Driver) DB() *sql.DB { return d.db }

// Ping implements store.Pinger: one round trip on a pooled connection.
// When db.SetMaxOpenConns caps the pool and handlers hold every
// connection, it waits for one (pgstore opens one of its own instead).
func (d *Driver) Ping(ctx context.Context) error { return d.db.PingContext(ctx) }

// IsTransient reports deadlocks, serialization failures, claim races and
// a connection found dead before anything was sent (driver.ErrBadConn).
func (d *Driver) IsTransient(err error) bool {
	return errors.Is(err, store.ErrClaimRace) || errors.Is(err, driver.ErrBadConn) || pgcore.IsTransient(err)
}

// IsRefused reports a data exception (class 22), an integrity constraint
// (23), a program limit (54) or an exception raised by a PL/pgSQL trigger
// (P0): the database refused the work, tied to some message of the batch.
func (d *Driver) IsRefused(err error) bool { return pgcore.IsRefused(err) }

// sqlDB is the seam of the shared PostgreSQL code (pgcore) on
// database/sql: Go slices go as array literals (pgcore.Literal), which
// every driver sends as text.
type sqlDB struct{ db *sql.DB }

func (s sqlDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return on(s.db).Exec(ctx, query, args...)
}

func (s sqlDB) Query(ctx context.Context, query string, args ...any) (pgcore.Rows, error) {
	return on(s.db).Query(ctx, query, args...)
}

func (s sqlDB) InTx(ctx context.Context, fn func(pgcore.Querier) error) error {
	return sqldb.InTx(ctx, s.db, func(tx *sql.Tx) error { return fn(on(tx)) })
}

// querier is a pgcore.Querier on a *sql.DB, *sql.Conn or *sql.Tx.
type querier struct{ sqldb.Querier }

func (q querier) Query(ctx context.Context, query string, args ...any) (pgcore.Rows, error) {
	return q.Querier.Query(ctx, query, args...)
}

func on(r sqldb.Runner) querier { return querier{sqldb.Querier{R: r, Convert: literal}} }

// literal turns a Go slice parameter into its array literal.
func literal(a any) any {
	if s, ok := pgcore.Literal(a); ok {
		return s
	}
	return a
}

// ErrNotPartitioned is returned by the partition methods of a Driver whose
// inbox table is not partitioned (pgstore.ErrNotPartitioned, the same
// error).
var ErrNotPartitioned = pgcore.ErrNotPartitioned

// ErrPeriodSwitchBusy is pgstore.ErrPeriodSwitchBusy, the same error.
var ErrPeriodSwitchBusy = pgcore.ErrPeriodSwitchBusy

// Period describes one period of the partitioned layout (pgstore.Period).
type Period = pgcore.Period
