// Package sqldb is the database/sql side of txinbox's SQL stores, shared
// by every store whose handlers receive a *sql.Tx on a driver it does not
// choose (pgdbstore on any PostgreSQL driver, mysqlstore): running
// statements with parameters converted for database/sql, rows with a
// Close that returns nothing (as the stores' seams want), short
// transactions of their own, and the batch transaction on a connection
// held until it ends.
package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"
)

// Runner is what *sql.DB, *sql.Conn and *sql.Tx share.
type Runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Rows are *sql.Rows whose Close returns nothing (its error comes back
// from Err).
type Rows struct{ *sql.Rows }

// Close closes the rows.
func (r Rows) Close() { r.Rows.Close() } //nolint:errcheck // Err reports it

// Querier runs statements on a Runner, each parameter passed through
// Convert first (nil: as it is).
type Querier struct {
	R       Runner
	Convert func(any) any
}

// args converts args in place.
func (q Querier) args(args []any) []any {
	if q.Convert == nil {
		return args
	}
	for i, a := range args {
		args[i] = q.Convert(a)
	}
	return args
}

// Exec runs query and returns the rows it affected.
func (q Querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.R.ExecContext(ctx, query, q.args(args)...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Query runs query.
func (q Querier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := q.R.QueryContext(ctx, query, q.args(args)...)
	return Rows{rows}, err
}

// InTx runs fn in a transaction of its own on db (the isolation level of
// the server's default), committed when fn returns nil.
func InTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// Batch is a batch transaction on a connection of its own, held until
// the transaction ends, so that the store can read the connection's state
// (DriverConn) between a handler's statements.
type Batch struct {
	Conn *sql.Conn
	Tx   *sql.Tx
	// Reset, when set, runs on the connection after the transaction
	// ended, before End gives it back to the pool (a session setting the
	// store made for the batch's duration); if it fails, the connection
	// is closed instead of going back.
	Reset string
}

// Session is what a store does around a batch transaction: Before runs
// on the connection before the BEGIN, outside the transaction; After in
// the transaction right after the BEGIN; Reset (Batch.Reset) once the
// transaction ended. Each statement is a round trip.
type Session struct {
	Before, After []string
	Reset         string
}

// Begin begins a batch transaction on a connection of db's, with opts
// and s.
func Begin(ctx context.Context, db *sql.DB, opts *sql.TxOptions, s Session) (*Batch, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	b := &Batch{Conn: conn}
	if len(s.Before) > 0 {
		b.Reset = s.Reset // a Before statement may have changed the session
	}
	for _, q := range s.Before {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, errors.Join(err, b.close())
		}
	}
	b.Tx, err = conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, errors.Join(err, b.close())
	}
	b.Reset = s.Reset
	for _, q := range s.After {
		if _, err := b.Tx.ExecContext(ctx, q); err != nil {
			return nil, errors.Join(err, b.End())
		}
	}
	return b, nil
}

// End rolls the transaction back if it is still open (nothing when the
// processor or a handler ended it), runs Reset, and gives the connection
// back to the pool, which closes it if it is broken.
func (b *Batch) End() error {
	err := ignoreDone(b.Tx.Rollback())
	return errors.Join(err, b.close())
}

// resetTimeout bounds Reset's round trip (the batch's context may be over).
const resetTimeout = 10 * time.Second

// close runs Reset, then gives the connection back (closed if Reset
// failed).
func (b *Batch) close() error {
	if b.Reset != "" {
		ctx, cancel := context.WithTimeout(context.Background(), resetTimeout)
		defer cancel()
		if _, err := b.Conn.ExecContext(ctx, b.Reset); err != nil {
			// A connection whose session the store could not reset
			// must not serve anyone else: ErrBadConn makes database/sql
			// close it (and the sql.Conn with it).
			_ = b.Conn.Raw(func(any) error { return driver.ErrBadConn })
			return nil
		}
	}
	return b.Conn.Close()
}

// DriverConn calls fn with the driver's connection under the batch, for
// state the driver keeps locally (no round trip).
func (b *Batch) DriverConn(fn func(dc any) error) error { return b.Conn.Raw(fn) }
