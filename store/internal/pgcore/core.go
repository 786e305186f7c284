// Package pgcore is txinbox's PostgreSQL store written once for every
// connection library: the migrations, the admin queries of the CLI and the
// console, failed attempts and dead letters, checkpoints, the purge and
// the partitioned layout, the lookup and the declarative effects' claims.
// It runs its SQL (store/internal/pgsql) through a narrow seam, DB and
// Querier, that pgstore implements on pgx and pgdbstore on database/sql
// (store/internal/sqldb): one dialect, two connection libraries. It
// imports no driver.
//
// What stays in each store is its batch transaction: how it begins, what
// a handler is given, how the commit guard is passed, and the hot claim,
// which pgstore sends in pgx batches.
package pgcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
	"github.com/txinbox/txinbox/store/schema"
)

// Rows is a query's result: pgx.Rows satisfies it as it is; a
// database/sql adapter wraps *sql.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs statements: a pool, or a transaction. Array parameters
// are Go slices ([]string, []*string, [][]byte, []time.Time); the adapter
// encodes them for its library.
type Querier interface {
	// Exec runs sql and returns the rows it affected.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	// Query runs sql and returns its rows; an error may also come from
	// the rows (Err) instead.
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
}

// DB is a database behind a store: a Querier outside any transaction, and
// short transactions of its own.
type DB interface {
	Querier
	// InTx runs fn in a transaction (READ COMMITTED), committed when fn
	// returns nil and rolled back otherwise.
	InTx(ctx context.Context, fn func(Querier) error) error
}

// Options are the store options that the shared code reads.
type Options struct {
	// Name prefixes the store's error messages ("pgstore").
	Name string
	// Schema and TablePrefix are the store's validated identifiers.
	Schema, TablePrefix string
	// Partitioned and PartitionPeriod are the partitioned layout's
	// options (pgstore.Options documents them).
	Partitioned     bool
	PartitionPeriod time.Duration
}

// Core is the shared part of a PostgreSQL store on one DB.
type Core struct {
	db   DB
	opts Options
	t    schema.Tables
	q    Queries
	// periods is the qualified name of the period table of the
	// partitioned layout.
	periods string
	// layout is the detected table layout, nil until known.
	layout atomic.Pointer[Layout]
}

// New returns the shared part of a store; opts are validated already.
func New(db DB, opts Options) *Core {
	t := schema.NewTables(opts.Schema, opts.TablePrefix)
	periods := pgsql.Qualify(opts.Schema, opts.TablePrefix+"inbox_periods")
	return &Core{db: db, opts: opts, t: t, q: NewQueries(t, periods), periods: periods}
}

// Validate checks and defaults the options a PostgreSQL store shares; the
// errors name the field as name.Options.Field.
func Validate(opts *Options) error {
	if opts.TablePrefix == "" {
		opts.TablePrefix = "txinbox_"
	}
	if err := schema.ValidateIdent(opts.Name+": Options.Schema", opts.Schema, true); err != nil {
		return err
	}
	if err := schema.ValidateIdent(opts.Name+": Options.TablePrefix", opts.TablePrefix, false); err != nil {
		return err
	}
	if opts.PartitionPeriod == 0 {
		opts.PartitionPeriod = 7 * 24 * time.Hour
	}
	if opts.PartitionPeriod < time.Minute {
		return fmt.Errorf("%s: Options.PartitionPeriod %s is below the minimum of 1m", opts.Name, opts.PartitionPeriod)
	}
	return nil
}

// Tables returns the qualified, quoted table names, for operators' SQL.
func (c *Core) Tables() schema.Tables { return c.t }

// The functions below are the core's parts that a store's own code uses;
// they are functions, not methods, so that a store embedding *Core
// exports its admin methods only.

// QueriesOf returns c's statements.
func QueriesOf(c *Core) *Queries { return &c.q }

// LayoutOf returns the layout of c's inbox table (see Core.layoutOf).
func LayoutOf(ctx context.Context, c *Core) (*Layout, error) { return c.layoutOf(ctx) }

// ListDeadLettersSQL is the query of ListDeadLetters, for its tests.
func ListDeadLettersSQL(c *Core, f store.ListFilter) (string, []any) { return c.listDeadLettersSQL(f) }

// expandP expands the table placeholders and {periods}.
func (c *Core) expandP(sql string) string {
	return strings.ReplaceAll(c.t.Expand(sql), "{periods}", c.periods)
}

// errf is an error of the store, named.
func (c *Core) errf(format string, args ...any) error {
	return fmt.Errorf(c.opts.Name+": "+format, args...)
}

// QueryRow runs sql and scans its first row into dest; it reports false
// (and no error) when there is none.
func QueryRow(ctx context.Context, q Querier, sql string, args []any, dest ...any) (bool, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	if err := rows.Scan(dest...); err != nil {
		return false, err
	}
	rows.Close()
	return true, rows.Err()
}

// ForEach scans each row of a query into dest and calls fn; it closes the
// rows.
func ForEach(rows Rows, err error, dest []any, fn func() error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
	}
	rows.Close()
	return rows.Err()
}

// SQLState is the SQLSTATE of a PostgreSQL error in err's chain (pgx's
// *pgconn.PgError and lib/pq's *pq.Error both say it), "" if none.
func SQLState(err error) string {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState()
	}
	return ""
}

// IsTransient reports deadlocks and serialization failures.
func IsTransient(err error) bool {
	c := SQLState(err)
	return c == "40001" || c == "40P01"
}

// IsRefused reports a data exception (class 22), an integrity constraint
// (23), a program limit (54) or an exception raised by a PL/pgSQL trigger
// (P0): the database refused the work, tied to some message of the batch.
func IsRefused(err error) bool {
	c := SQLState(err)
	if len(c) < 2 {
		return false
	}
	switch c[:2] {
	case "22", "23", "54", "P0":
		return true
	}
	return false
}

// IsAdvanceMoved reports the failure of Statements.AdvanceGuarded.
func IsAdvanceMoved(err error) bool {
	return SQLState(err) == "22P02" && strings.Contains(err.Error(), pgsql.AdvanceMoved)
}

// IsNotBatchTx reports pgsql.CheckBatch's failure (also in
// pgsql.CommitSQL and pgsql.CommitSetting).
func IsNotBatchTx(err error) bool {
	return SQLState(err) == "22P02" && strings.Contains(err.Error(), pgsql.NotBatchTx)
}
