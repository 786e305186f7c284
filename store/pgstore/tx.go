package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// pgTx begins lazily: when its first statement is the claim, the BEGIN
// travels in the same round trip (pgx.Batch.BeginTx), so a batch costs
// one round trip less.
type pgTx struct {
	pool *pgxpool.Pool
	// conn is the transaction's connection, held from its first
	// statement until it ends; tx is the transaction on it (nil until
	// begun, and again once ended).
	conn *pgxpool.Conn
	tx   pgx.Tx
	htx  *handlerTx
	// queue holds the statements handlers queued (Queue) that have not
	// been sent yet: they travel with the COMMIT (queue.go). queueMu
	// guards Queue's appends (a handler's goroutines may queue at once).
	queue   []queued
	queueMu sync.Mutex
	d       *Driver
	q       *pgcore.Queries
	layout  *pgcore.Layout
	// plan is the checkpoint the claim saves, if planned; saved is it
	// once the claim saved it.
	plan, saved *store.Checkpoint
	// advance holds the arguments of a deferred checkpoint move
	// (DeferAdvance) until the first round trip sends it; beginErr is
	// the error of a first round trip that a handler's statement sent.
	advance  []any
	beginErr error
}

var _ store.CheckpointPlanner = (*pgTx)(nil)

// PlanCheckpoint implements store.CheckpointPlanner: the claim, if it is
// the transaction's first statement, saves cp (plain layout).
func (t *pgTx) PlanCheckpoint(cp store.Checkpoint) {
	if t.tx == nil && !t.layout.Partitioned {
		t.plan = &cp
	}
}

// txOptions begin every batch transaction: its COMMIT is pgsql.CommitSQL, the
// only one the commit guard lets through.
var txOptions = pgx.TxOptions{CommitQuery: pgsql.CommitSQL}

// Tx returns the open transaction as handlers see it: guarded, so that
// its Commit and Rollback are refused. The processor calls it only after
// the claim began the transaction, or with a deferred checkpoint move
// (DeferAdvance): then the handler's first statement begins it (lazy.go).
func (t *pgTx) Tx() pgx.Tx {
	if t.htx == nil || t.htx.Tx != t.tx {
		t.htx = &handlerTx{Tx: t.tx, owner: t}
	}
	return t.htx
}

// Check reads the connection's local state after a handler: no round trip.
func (t *pgTx) Check(herr error) error {
	if h := t.htx; h != nil && h.ended != "" {
		what := h.ended
		h.ended = ""
		return &store.BrokenTxError{Reason: "it called " + what + " on the transaction it was given (refused: the processor ends it)"}
	}
	if errors.Is(t.beginErr, store.ErrCheckpointMoved) {
		return store.ErrCheckpointMoved
	}
	if t.beginErr != nil {
		return &store.BrokenTxError{Lost: true, DatabaseFault: true,
			Reason: "the transaction could not begin at the handler's first statement: " + t.beginErr.Error()}
	}
	if t.tx == nil {
		return nil
	}
	pc := t.tx.Conn().PgConn()
	if pc.IsClosed() {
		if serverOrNetwork(herr) {
			return &store.BrokenTxError{Lost: true, ConnClosed: true, DatabaseFault: true,
				Reason: "the connection failed during the handler: " + herr.Error()}
		}
		return &store.BrokenTxError{Lost: true, ConnClosed: true,
			Reason: "its connection was closed during the handler (pgx closes it when a statement's context expires, e.g. the handler's own deadline)"}
	}
	if errors.Is(herr, errQueuedEndedTx) { // ROLLBACK AND CHAIN leaves a transaction open, not the batch's
		return &store.BrokenTxError{Lost: true, Reason: "a statement it queued ended the transaction (COMMIT or ROLLBACK as SQL)"}
	}
	switch pc.TxStatus() {
	case 'I':
		return &store.BrokenTxError{Lost: true,
			Reason: "it ended the transaction with COMMIT or ROLLBACK as SQL (the commit guard refuses such a COMMIT: the transaction rolled back)"}
	case 'E':
		return &store.BrokenTxError{Aborted: true,
			Reason: "a statement failed in the handler and the handler returned nil (the transaction was aborted, SQLSTATE 25P02)"}
	}
	return nil
}

// begin starts the transaction if no statement did yet.
func (t *pgTx) begin(ctx context.Context) error {
	if t.tx != nil {
		return nil
	}
	b := t.firstBatch()
	if t.layout.Partitioned {
		// Taken before any savepoint: a lock taken inside one would be
		// released by ROLLBACK TO SAVEPOINT.
		b.Queue(pgcore.LockPeriodShared, t.layout.PeriodLock)
	}
	return t.sendFirst(ctx, b)
}

// firstBatch begins a transaction's first round trip: the BEGIN,
// pgsql.MarkBatch, which the commit checks, and a deferred checkpoint move
// (DeferAdvance), which arms the commit guard.
func (t *pgTx) firstBatch() *pgx.Batch {
	b := &pgx.Batch{}
	b.BeginTx(txOptions)
	b.Queue(pgsql.MarkBatch)
	if t.advance != nil {
		b.Queue(t.q.AdvanceGuarded, t.advance...)
		t.advance = nil
	}
	return b
}

// release hands the connection back to the pool once the transaction
// ended (the pool closes it if it is not idle).
func (t *pgTx) release() {
	t.tx, t.queue = nil, nil
	if t.conn != nil {
		t.conn.Release()
		t.conn = nil
	}
}

// RecordDrift inserts the drift rows in the transaction.
func (t *pgTx) RecordDrift(ctx context.Context, rows []store.DriftRow) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	return pgcore.InsertDrift(ctx, t.d.core, onTx(t.tx), rows)
}

// Savepoint sets the message's savepoint.
func (t *pgTx) Savepoint(ctx context.Context) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, "SAVEPOINT txinbox_message")
	return err
}

// RollbackToSavepoint undoes the message's work, the statements its
// handler queued included.
func (t *pgTx) RollbackToSavepoint(ctx context.Context) error {
	t.queue = nil // the failed handler's statements
	_, err := t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT txinbox_message")
	return err
}

// ReleaseSavepoint releases the message's savepoint; when it is gone (a
// handler ended the transaction and began another: ROLLBACK AND CHAIN as
// SQL), the error is a *store.BrokenTxError, Lost.
func (t *pgTx) ReleaseSavepoint(ctx context.Context) error {
	_, err := t.tx.Exec(ctx, "RELEASE SAVEPOINT txinbox_message")
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "3B001" {
		return &store.BrokenTxError{Lost: true, Reason: "it ended the batch transaction and began another (ROLLBACK AND CHAIN as SQL?)"}
	}
	return err
}

// Commit commits, in one round trip with the statements handlers queued
// (queue.go); a transaction that never began (or ended) has nothing to
// commit.
func (t *pgTx) Commit(ctx context.Context) error {
	if t.tx == nil {
		if t.advance != nil {
			return t.commitDeferred(ctx)
		}
		return nil
	}
	defer t.release()
	if len(t.queue) > 0 {
		return t.commitQueued(ctx)
	}
	err := t.tx.Commit(ctx)
	if isNotBatchTx(err) {
		// A handler ended the batch transaction and began another
		// (ROLLBACK AND CHAIN as SQL): nothing of either is committed.
		return &store.BrokenTxError{Lost: true,
			Reason: "a handler ended the batch transaction (ROLLBACK AND CHAIN as SQL?): nothing committed"}
	}
	return err
}

// Rollback rolls back; a transaction that never began (or ended) has
// nothing to undo.
func (t *pgTx) Rollback(ctx context.Context) error {
	t.advance = nil
	if t.tx == nil {
		return nil
	}
	defer t.release()
	return t.tx.Rollback(ctx)
}

// DeadLetter inserts the dead letters in the transaction.
func (t *pgTx) DeadLetter(ctx context.Context, rows []store.DeadLetterRow) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	return pgcore.InsertDeadLetters(ctx, t.d.core, onTx(t.tx), rows)
}

// SaveCheckpoint saves cp, unless the claim already saved it.
func (t *pgTx) SaveCheckpoint(ctx context.Context, cp store.Checkpoint) error {
	if t.saved != nil {
		if *t.saved == cp {
			return nil // the claim saved it
		}
		return fmt.Errorf("pgstore: the claim saved checkpoint %d of %s/%d, the batch ends at %d", t.saved.Position,
			cp.Source, cp.Partition, cp.Position)
	}
	if err := t.begin(ctx); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, t.q.Checkpoint, pgcore.CheckpointArgs(&cp)...)
	return err
}
