package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/sqldb"
)

// myTx is a batch transaction: an XA transaction (conn.go) on a
// connection held until it ends, so that Check reads the connection's
// state.
type myTx struct {
	d *Driver
	b *sqldb.Batch
	c *conn
	// claimID marks the inbox rows this transaction inserts.
	claimID int64
	// form is how its statements spell tables of rows (rowsForm).
	form rowsForm
}

var _ store.CheckpointAdvancer = (*myTx)(nil)

// Begin begins a batch transaction at Options.Isolation on a connection
// of its own: XA START, after SET TRANSACTION ISOLATION LEVEL unless the
// session is at that level already (and, on a connection's first batch,
// one probe of the server and the session's level).
func (d *Driver) Begin(ctx context.Context) (store.Tx[*sql.Tx], error) {
	b, err := sqldb.Begin(context.WithValue(ctx, batchKey{}, true), d.db, &sql.TxOptions{Isolation: d.opts.Isolation}, sqldb.Session{})
	if err != nil {
		return nil, err
	}
	var c *conn
	_ = b.DriverConn(func(dc any) error { c, _ = dc.(*conn); return nil })
	if c == nil {
		return nil, errors.Join(errors.New("mysqlstore: the connection is not txinbox's (open the database with mysqlstore.Open)"), b.End())
	}
	return &myTx{d: d, b: b, c: c, claimID: rand.Int64N(1<<62) + 1, form: c.rowsForm()}, nil
}

// Tx returns the transaction handed to handlers.
func (t *myTx) Tx() *sql.Tx { return t.b.Tx }

// RecordDrift inserts the drift rows in the transaction.
func (t *myTx) RecordDrift(ctx context.Context, rows []store.DriftRow) error {
	return insertDrift(ctx, t.b.Tx, t.d.t, rows)
}

// DeadLetter inserts the dead letters in the transaction.
func (t *myTx) DeadLetter(ctx context.Context, rows []store.DeadLetterRow) error {
	return insertDeadLetters(ctx, t.b.Tx, t.d.t, rows)
}

// SaveCheckpoint saves cp unless the saved position is higher.
func (t *myTx) SaveCheckpoint(ctx context.Context, cp store.Checkpoint) error {
	_, err := t.b.Tx.ExecContext(ctx, t.d.t.Expand("INSERT INTO {checkpoints} (scope, source, `partition`, position, updated_at) VALUES (?, ?, ?, ?, ?)\n"+
		"ON DUPLICATE KEY UPDATE updated_at = IF(VALUES(position) > position, VALUES(updated_at), updated_at), position = GREATEST(position, VALUES(position))"),
		cp.Scope, cp.Source, cp.PartitionText(), cp.Position, formatTime(time.Now()))
	return err
}

// AdvanceCheckpoint implements store.CheckpointAdvancer: an UPDATE of
// the row at previous (for -1, an INSERT of the row, or an update of one
// saved at -1), whose exclusive lock orders the transactions of a
// partition; the second finds the position moved (READ COMMITTED re-reads
// the row it waited for). A move that changes no row (to where it is) is
// told by a locking read.
func (t *myTx) AdvanceCheckpoint(ctx context.Context, cp store.Checkpoint, previous int64) (bool, error) {
	now := formatTime(time.Now())
	var r sql.Result
	var err error
	if previous == -1 {
		r, err = t.b.Tx.ExecContext(ctx, t.d.t.Expand("INSERT INTO {checkpoints} (scope, source, `partition`, position, updated_at) VALUES (?, ?, ?, ?, ?)\n"+
			"ON DUPLICATE KEY UPDATE updated_at = IF(position = -1, VALUES(updated_at), updated_at), position = IF(position = -1, VALUES(position), position)"),
			cp.Scope, cp.Source, cp.PartitionText(), cp.Position, now)
	} else {
		r, err = t.b.Tx.ExecContext(ctx, t.d.t.Expand("UPDATE {checkpoints} SET position = ?, updated_at = ?\n"+
			"WHERE scope = ? AND source = ? AND `partition` = ? AND position = ?"), cp.Position, now, cp.Scope, cp.Source, cp.PartitionText(), previous)
	}
	if err != nil {
		return false, err
	}
	if n, err := r.RowsAffected(); err != nil || n > 0 {
		return n > 0, err
	}
	var pos int64
	err = t.b.Tx.QueryRowContext(ctx, t.d.t.Expand("SELECT position FROM {checkpoints} WHERE scope = ? AND source = ? AND `partition` = ? FOR UPDATE"),
		cp.Scope, cp.Source, cp.PartitionText()).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil && pos == previous && cp.Position == previous, err
}

// Savepoint sets the message's savepoint.
func (t *myTx) Savepoint(ctx context.Context) error {
	t.c.clearBroken()
	_, err := t.b.Tx.ExecContext(ctx, "SAVEPOINT txinbox_message")
	return err
}

// RollbackToSavepoint undoes the message's work (and forgets a COMMIT the
// guard refused during it).
func (t *myTx) RollbackToSavepoint(ctx context.Context) error {
	_, err := t.b.Tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT txinbox_message")
	t.c.clearBroken()
	return err
}

// ReleaseSavepoint releases the message's savepoint.
func (t *myTx) ReleaseSavepoint(ctx context.Context) error {
	_, err := t.b.Tx.ExecContext(ctx, "RELEASE SAVEPOINT txinbox_message")
	return err
}

// Commit ends the XA transaction (XA END, XA COMMIT ... ONE PHASE) and
// gives the connection back. A transaction a handler broke is rolled
// back instead, and the error says how.
func (t *myTx) Commit(ctx context.Context) error {
	if broken, _ := t.c.state(); broken != nil {
		t.c.own.Store(true)
		return errors.Join(broken, t.b.End())
	}
	t.c.own.Store(true)
	err := t.b.Tx.Commit()
	return errors.Join(err, t.b.End())
}

// Rollback rolls back, also a transaction a handler ended, and gives the
// connection back.
func (t *myTx) Rollback(context.Context) error {
	t.c.own.Store(true)
	return t.b.End()
}

// Check reports, after a handler, what the connection saw it do (no
// round trip): end the *sql.Tx, run a statement that would have ended
// the transaction (refused), a statement after which the server rolled
// the transaction back (a swallowed deadlock), or lose the connection.
func (t *myTx) Check(herr error) error {
	broken, closed := t.c.state()
	if closed {
		return connClosed(herr)
	}
	if broken != nil {
		return broken
	}
	return nil
}

// connClosed is the error of a connection lost during the handler.
func connClosed(herr error) error {
	if serverOrNetwork(herr) {
		return &store.BrokenTxError{Lost: true, ConnClosed: true, DatabaseFault: true,
			Reason: "the connection failed during the handler: " + herr.Error()}
	}
	return &store.BrokenTxError{Lost: true, ConnClosed: true,
		Reason: "its connection was closed during the handler (go-sql-driver closes it when a statement's context expires, e.g. the handler's own deadline)"}
}

// serverOrNetwork reports whether a handler's error says that the server
// or the network closed its connection, not its own context.
func serverOrNetwork(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	return errorNumber(err) != 0 || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "invalid connection")
}
