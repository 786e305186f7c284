package pgdbstore

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// Check reports, after a handler, whether it broke the transaction. On
// pgx's stdlib it reads the connection's local state (no round trip); on
// other drivers, which keep that state to themselves, it asks the server
// (one round trip per handler run: pgsql.CheckBatch).
//
// What it tells: the *sql.Tx ended by the handler (tx.Commit, refused by
// the commit guard, or tx.Rollback: either way the batch rolled back);
// COMMIT or ROLLBACK run as SQL (the same); a statement that failed and
// left the transaction aborted while the handler returned nil; a
// connection closed under the handler (its own deadline on pgx, or the
// server).
func (t *dbTx) Check(herr error) error {
	var err error
	if status, closed, ok := t.localState(); ok {
		err = checkLocal(status, closed, herr)
	} else {
		err = t.checkByQuery(herr)
	}
	if b, ok := errors.AsType[*store.BrokenTxError](err); ok && b.Lost {
		t.lost = true
	}
	return err
}

// localState reads pgx's transaction status of the connection ('I' idle,
// 'T' in a transaction, 'E' in a failed one) and whether it is closed; ok
// is false on a driver that does not tell.
func (t *dbTx) localState() (status byte, closed, ok bool) {
	_ = t.b.DriverConn(func(dc any) error {
		if c, is := dc.(interface{ Conn() *pgx.Conn }); is {
			pc := c.Conn().PgConn()
			status, closed, ok = pc.TxStatus(), pc.IsClosed(), true
		}
		return nil
	})
	return status, closed, ok
}

const (
	endedReason = "it ended the transaction it was given (tx.Commit or tx.Rollback on the *sql.Tx, or COMMIT or ROLLBACK as SQL; " +
		"the commit guard refuses a COMMIT: the whole batch transaction rolled back)"
	abortedReason = "a statement failed in the handler and the handler returned nil (the transaction was aborted, SQLSTATE 25P02)"
)

// checkLocal is Check from pgx's connection state.
func checkLocal(status byte, closed bool, herr error) error {
	switch {
	case closed:
		return connClosed(herr)
	case status == 'I':
		return &store.BrokenTxError{Lost: true, Reason: endedReason}
	case status == 'E':
		return &store.BrokenTxError{Aborted: true, Reason: abortedReason}
	}
	return nil
}

// checkTimeout bounds checkByQuery's round trip.
const checkTimeout = 30 * time.Second

// checkByQuery is Check by a round trip: pgsql.CheckBatch fails when the
// transaction is not the batch's any more (the setting pgsql.MarkBatch
// made, with the claim, is gone with it) or is aborted; database/sql
// refuses it when the handler ended the *sql.Tx.
func (t *dbTx) checkByQuery(herr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	var one int
	err := t.b.Tx.QueryRowContext(ctx, pgsql.CheckBatch).Scan(&one)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrTxDone):
		return &store.BrokenTxError{Lost: true, Reason: "it ended the *sql.Tx it was given (tx.Commit, refused by the commit guard, " +
			"or tx.Rollback): the whole batch transaction rolled back"}
	case pgcore.IsNotBatchTx(err):
		return &store.BrokenTxError{Lost: true, Reason: "it ended the transaction with COMMIT or ROLLBACK as SQL " +
			"(the commit guard refuses such a COMMIT: the transaction rolled back)"}
	case pgcore.SQLState(err) != "":
		return &store.BrokenTxError{Aborted: true, Reason: abortedReason}
	}
	return connClosed(herr)
}

// connClosed is the error of a connection lost during the handler.
func connClosed(herr error) error {
	if serverOrNetwork(herr) {
		return &store.BrokenTxError{Lost: true, ConnClosed: true, DatabaseFault: true,
			Reason: "the connection failed during the handler: " + herr.Error()}
	}
	return &store.BrokenTxError{Lost: true, ConnClosed: true,
		Reason: "its connection was closed during the handler (pgx and lib/pq close it when a statement's context expires, e.g. the handler's own deadline)"}
}

// serverOrNetwork reports whether a handler's error says that the server
// or the network closed its connection (not its own context: lib/pq
// reports a statement its context canceled as the server's
// query_canceled, 57014, and closes the connection).
func serverOrNetwork(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		pgcore.SQLState(err) == "57014" {
		return false
	}
	var ne net.Error
	return pgcore.SQLState(err) != "" || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
