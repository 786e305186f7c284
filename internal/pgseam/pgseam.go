// Package pgseam is the seam of txinbox's PostgreSQL tables outside the
// inbox store (the outbox table, outbox/outboxpg; the AS4 tables,
// as4/as4pg): their SQL is written once against DB, Tx and Querier, and
// runs on pgx (a pool, a pgx.Tx) or on database/sql (a *sql.DB, a
// *sql.Tx, with any PostgreSQL driver), so that they serve pgstore and
// pgdbstore alike. Parameters are scalars ([]byte, string, time.Time,
// numbers, pointers to them): no arrays, which database/sql drivers do
// not encode alike.
package pgseam

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNoRows is QueryRow's error when the query returned no row.
var ErrNoRows = errors.New("pgseam: no rows in result set")

// Rows is a query's result.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Stmt is a statement with its arguments.
type Stmt struct {
	SQL  string
	Args []any
}

// Querier runs statements: a database outside any transaction, or a
// transaction.
type Querier interface {
	// Exec runs sql and returns the rows it affected.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	// Query runs sql; an error may also come from the rows' Err.
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	// ExecAll runs the statements in order, stopping at the first
	// error: on pgx in one round trip (a pgx.Batch), on database/sql one
	// each.
	ExecAll(ctx context.Context, stmts []Stmt) error
}

// Tx is a transaction of a DB's.
type Tx interface {
	Querier
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// DB is a database: a Querier outside any transaction that begins
// transactions (READ COMMITTED, the server's default).
type DB interface {
	Querier
	Begin(ctx context.Context) (Tx, error)
}

// QueryRow scans the first row of sql's result into dest: ErrNoRows when
// there is none.
func QueryRow(ctx context.Context, q Querier, sql string, args []any, dest ...any) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// InTx runs fn in a transaction of db's, committed when fn returns nil,
// rolled back otherwise.
func InTx(ctx context.Context, db DB, fn func(Querier) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback(context.WithoutCancel(ctx)))
	}
	return tx.Commit(ctx)
}

// pgxRunner is what a pgx pool and a pgx.Tx share.
type pgxRunner interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

type pgxQuerier struct{ r pgxRunner }

func (q pgxQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.r.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (q pgxQuerier) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	return q.r.Query(ctx, sql, args...)
}

func (q pgxQuerier) ExecAll(ctx context.Context, stmts []Stmt) error {
	b := &pgx.Batch{}
	for _, s := range stmts {
		b.Queue(s.SQL, s.Args...)
	}
	return q.r.SendBatch(ctx, b).Close()
}

type pgxDB struct {
	pgxQuerier
	pool *pgxpool.Pool
}

func (d pgxDB) Begin(ctx context.Context) (Tx, error) {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return pgxTx{pgxQuerier{tx}, tx}, nil
}

type pgxTx struct {
	pgxQuerier
	tx pgx.Tx
}

func (t pgxTx) Commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t pgxTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

// Pgx is pool as a DB.
func Pgx(pool *pgxpool.Pool) DB { return pgxDB{pgxQuerier{pool}, pool} }

// PgxTx is tx (a handler's) as a Querier.
func PgxTx(tx pgx.Tx) Querier { return pgxQuerier{tx} }

// sqlRunner is what *sql.DB and *sql.Tx share.
type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

type sqlQuerier struct{ r sqlRunner }

func (q sqlQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.r.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q sqlQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := q.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (q sqlQuerier) ExecAll(ctx context.Context, stmts []Stmt) error {
	for _, s := range stmts {
		if _, err := q.r.ExecContext(ctx, s.SQL, s.Args...); err != nil {
			return err
		}
	}
	return nil
}

// sqlRows are *sql.Rows whose Close returns nothing (Err reports it).
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() } //nolint:errcheck // Err reports it

type sqlDB struct {
	sqlQuerier
	db *sql.DB
}

// Begin begins a transaction that, as pgx's, outlives ctx: database/sql
// rolls a transaction back when the context it began with is canceled,
// and a claim's transaction must still record what was sent after its
// caller was canceled (outbox's Relay finishes it on a context of its
// own).
func (d sqlDB) Begin(ctx context.Context) (Tx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tx, err := d.db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return nil, err
	}
	return sqlTx{sqlQuerier{tx}, tx}, nil
}

type sqlTx struct {
	sqlQuerier
	tx *sql.Tx
}

func (t sqlTx) Commit(context.Context) error { return t.tx.Commit() }

func (t sqlTx) Rollback(context.Context) error {
	if err := t.tx.Rollback(); !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// SQL is db, a PostgreSQL database opened with any database/sql driver,
// as a DB.
func SQL(db *sql.DB) DB { return sqlDB{sqlQuerier{db}, db} }

// SQLTx is tx (a handler's) as a Querier.
func SQLTx(tx *sql.Tx) Querier { return sqlQuerier{tx} }
