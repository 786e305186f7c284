package pgstore

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// A transaction with a deferred checkpoint move (DeferAdvance) has not
// begun when its handlers run. A handler that only queues its statements
// (Queue) leaves it so until the commit, which sends the BEGIN, the move,
// the queued statements and the COMMIT in one round trip
// (commitDeferred); a handler's first other statement begins it, the move
// in the same round trip as the BEGIN (handlerTx.begin).

// waiting reports whether t has a deferred move and no statement sent
// yet: a handler's statements may still begin it.
func (t *pgTx) waiting() bool { return t.tx == nil && t.advance != nil }

// begin begins the owner's transaction for a handler given it before it
// began (Tx with a deferred move), and makes h its handle. A handle whose
// batch ended without beginning is refused (errTxEnded).
func (h *handlerTx) begin(ctx context.Context) error {
	if h.Tx != nil {
		return nil
	}
	t := h.owner
	if !t.waiting() {
		if t.tx == nil {
			return errTxEnded
		}
		h.Tx = t.tx // another handle began it
		return nil
	}
	err := t.begin(ctx)
	if t.tx != nil {
		h.Tx = t.tx
	}
	if err != nil {
		t.beginErr = err
	}
	return err
}

// Conn returns the transaction's connection, beginning the transaction
// first if it is deferred (nil if that failed: the handler's statements
// on it would have failed too; the processor reports the failed begin).
func (h *handlerTx) Conn() *pgx.Conn {
	if h.begin(context.Background()) != nil && h.Tx == nil {
		return nil
	}
	return h.Tx.Conn()
}

// LargeObjects returns the transaction's large objects, beginning the
// transaction first if it is deferred.
func (h *handlerTx) LargeObjects() pgx.LargeObjects {
	if h.begin(context.Background()) != nil && h.Tx == nil {
		return pgx.LargeObjects{}
	}
	return h.Tx.LargeObjects()
}

// commitDeferred commits a transaction that never began: one round trip
// with the BEGIN, pgsql.MarkBatch, the checkpoint move (which fails the rest
// when the checkpoint moved: store.ErrCheckpointMoved), the queued
// statements and the COMMIT.
func (t *pgTx) commitDeferred(ctx context.Context) error {
	b := t.firstBatch()
	first := len(b.QueuedQueries)
	sent := t.queueInto(b)
	b.Queue(pgsql.CommitSetting)
	b.Queue("COMMIT")
	c, err := t.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	t.conn = c
	defer t.release()
	br := c.SendBatch(ctx, b)
	t.tx = br.Tx()
	for range first {
		if _, err := br.Exec(); err != nil {
			return t.abandon(ctx, br, firstError(err, sent))
		}
	}
	return t.finishCommit(ctx, br, sent)
}

// firstError is the error of a deferred commit's first statements (the
// BEGIN, pgsql.MarkBatch, the checkpoint move): store.ErrCheckpointMoved for the
// move's failure; a queued statement's, named, when pgx could not prepare
// or encode it (it fails the batch before anything is sent).
func firstError(err error, sent []string) error {
	var pp pgx.ErrPreprocessingBatch
	if errors.As(err, &pp) {
		if i := slices.Index(sent, pp.SQL()); i >= 0 {
			return &store.QueuedStatementError{Index: i, SQL: sent[i], Err: err}
		}
	}
	return movedError(err)
}
