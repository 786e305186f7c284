package pgstore

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txinbox/txinbox/store"
)

// handlerTx is the pgx.Tx handed to handlers. Commit and Rollback end
// nothing: they return store.ErrTxEndByHandler and are reported by Check,
// so the message fails. Begin (a savepoint) and every statement pass
// through, but only while the transaction is open: after a handler ended
// it with COMMIT or ROLLBACK as SQL, its statements would run in
// autocommit mode, so they get errTxEnded instead (statements sent
// through Conn() are not guarded).
type handlerTx struct {
	pgx.Tx
	owner *pgTx
	ended string
}

var errTxEnded = errors.New("pgstore: the batch transaction has ended (a handler ran COMMIT or ROLLBACK as SQL): statement refused")

// open reports whether the transaction is still open: local state. A
// handler that kept its transaction after the batch ended finds it ended
// (its connection may serve another batch by then).
func (h *handlerTx) open() bool {
	if h.Tx == nil {
		return h.owner.waiting()
	}
	return h.owner.tx == h.Tx && h.Tx.Conn().PgConn().TxStatus() != 'I'
}

// Begin begins a savepoint while the transaction is open.
func (h *handlerTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := h.begin(ctx); err != nil {
		return nil, err
	}
	if !h.open() {
		return nil, errTxEnded
	}
	return h.Tx.Begin(ctx)
}

// CopyFrom copies while the transaction is open.
func (h *handlerTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := h.begin(ctx); err != nil {
		return 0, err
	}
	if !h.open() {
		return 0, errTxEnded
	}
	return h.Tx.CopyFrom(ctx, table, cols, src)
}

// SendBatch sends b while the transaction is open.
func (h *handlerTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := h.begin(ctx); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	if !h.open() {
		return pgx.FailedBatchResults(b, errTxEnded)
	}
	return h.Tx.SendBatch(ctx, b)
}

// Prepare prepares while the transaction is open.
func (h *handlerTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := h.begin(ctx); err != nil {
		return nil, err
	}
	if !h.open() {
		return nil, errTxEnded
	}
	return h.Tx.Prepare(ctx, name, sql)
}

// Exec runs sql while the transaction is open.
func (h *handlerTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := h.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	if !h.open() {
		return pgconn.CommandTag{}, errTxEnded
	}
	return h.Tx.Exec(ctx, sql, args...)
}

// Query runs sql while the transaction is open.
func (h *handlerTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := h.begin(ctx); err != nil {
		return nil, err
	}
	if !h.open() {
		return nil, errTxEnded
	}
	return h.Tx.Query(ctx, sql, args...)
}

// QueryRow runs sql while the transaction is open.
func (h *handlerTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := h.begin(ctx); err != nil {
		return errRow{err}
	}
	if !h.open() {
		return errRow{}
	}
	return h.Tx.QueryRow(ctx, sql, args...)
}

// serverOrNetwork reports whether a handler's error says that the server
// or the network closed its connection (not its own context).
func serverOrNetwork(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	var ne net.Error
	return errors.As(err, &pe) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET)
}

// errRow is the Row of a QueryRow that was refused: err, else errTxEnded.
type errRow struct{ err error }

// Scan returns the refusal.
func (r errRow) Scan(...any) error {
	if r.err != nil {
		return r.err
	}
	return errTxEnded
}

// Commit ends nothing: it is refused, and Check reports it.
func (h *handlerTx) Commit(context.Context) error {
	h.ended = "tx.Commit"
	return store.ErrTxEndByHandler
}

// Rollback ends nothing: it is refused, and Check reports it.
func (h *handlerTx) Rollback(context.Context) error {
	h.ended = "tx.Rollback"
	return store.ErrTxEndByHandler
}
