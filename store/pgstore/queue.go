package pgstore

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// queued is a statement a handler queued with Queue.
type queued struct {
	sql  string
	args []any
}

var errNotBatchTx = errors.New("pgstore.Queue: tx is not the batch transaction a handler was given")

// Queue queues a statement in tx, the batch transaction a handler was
// given, to run after the handler returns, in the same round trip as the
// batch's COMMIT: a BatchHandler that writes its effects with one queued
// statement costs the batch two round trips (BEGIN with the claim, then
// the statement with the COMMIT) instead of three.
//
// Statements run in the order queued, after every statement the handler
// ran directly (Exec, Query) and before the commit; their results are not
// returned, only their errors. If one fails, the transaction rolls back
// and the batch is redone a message at a time, each message's statements
// sent right after its handler, under its savepoint: the failure then
// fails that message alone, like an error its handler returned. A queued
// statement that ends the transaction (ROLLBACK as SQL, with or without
// AND CHAIN) fails its message too, and nothing queued after it commits:
// the queued statements are sent between two small statements that mark
// the transaction and check the mark, in the same round trip. args are
// read when the statement is sent: do not change them after queueing
// (as with pgx.Batch).
//
// Queue returns an error, and queues nothing, when tx is not the
// transaction handed to the running handler or that transaction has ended.
// Goroutines of the handler may queue at the same time, but must be done
// before it returns: a statement queued later is lost or lands in a later
// message's savepoint. A handler does not see the statements that handlers
// of earlier messages of its batch queued (they have not run yet), except
// in the redo a message at a time: do not queue what a later message's
// handler reads.
// For example:
//
//	func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
//		ids := make([]string, len(msgs))
//		for i, m := range msgs {
//			ids[i] = m.ID
//		}
//		return pgstore.Queue(tx, "INSERT INTO invoices (message_id) SELECT unnest($1::text[])", ids)
//	}
func Queue(tx pgx.Tx, sql string, args ...any) error {
	h, ok := tx.(*handlerTx)
	if !ok {
		return errNotBatchTx
	}
	if !h.open() {
		return errTxEnded
	}
	h.owner.queueMu.Lock()
	defer h.owner.queueMu.Unlock()
	h.owner.queue = append(h.owner.queue, queued{sql: sql, args: args})
	return nil
}

var _ store.StatementQueue = (*pgTx)(nil)

// FlushQueued implements store.StatementQueue: the queued statements are
// sent now, in one round trip.
func (t *pgTx) FlushQueued(ctx context.Context) error {
	if len(t.queue) == 0 || t.tx == nil {
		return nil
	}
	b := &pgx.Batch{}
	sent := t.queueInto(b)
	br := t.tx.SendBatch(ctx, b)
	return closeQueued(br, sent, nil)
}

var errQueuedEndedTx = errors.New("pgstore: it ended the batch transaction (COMMIT or ROLLBACK as SQL); " +
	"the statements queued after it were rolled back")

// queueInto moves the queued statements into b, followed by pgsql.CheckBatch
// (a queued statement that ended the transaction fails it, and what ran
// after it is rolled back instead of committing on its own), and returns
// their texts.
func (t *pgTx) queueInto(b *pgx.Batch) []string {
	defer b.Queue(pgsql.CheckBatch)
	sent := make([]string, len(t.queue))
	for i, q := range t.queue {
		b.Queue(q.sql, q.args...)
		sent[i] = q.sql
	}
	t.queue = nil
	return sent
}

// commitQueued sends the queued statements and the COMMIT in one round
// trip. If a statement fails, those after it and the COMMIT are skipped
// (the pipeline's rule), and the transaction is rolled back here.
func (t *pgTx) commitQueued(ctx context.Context) error {
	b := &pgx.Batch{}
	sent := t.queueInto(b)
	b.Queue(pgsql.CommitSetting)
	b.Queue("COMMIT")
	return t.finishCommit(ctx, t.tx.SendBatch(ctx, b), sent)
}

// finishCommit reads the results of the queued statements sent and of
// the pgsql.CommitSetting and COMMIT after them, and rolls the transaction back
// if one failed.
func (t *pgTx) finishCommit(ctx context.Context, br pgx.BatchResults, sent []string) error {
	err := closeQueued(br, sent, func() error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		tag, err := br.Exec()
		if err == nil && tag.String() == "ROLLBACK" {
			err = pgx.ErrTxCommitRollback
		}
		return err
	})
	if err != nil {
		return t.rollbackOpen(ctx, err)
	}
	return nil
}

// abandon closes br after its statement failed with err and rolls the
// transaction back if it is open.
func (t *pgTx) abandon(ctx context.Context, br pgx.BatchResults, err error) error {
	br.Close() //nolint:errcheck // err is the first failure
	return t.rollbackOpen(ctx, err)
}

// rollbackOpen returns err, rolling the transaction back if it is still
// open. A closed connection (a queued statement ended its own session)
// has nothing to roll back: the attempt's error would hide the
// statement's.
func (t *pgTx) rollbackOpen(ctx context.Context, err error) error {
	c := t.tx.Conn()
	if c == nil { // a batch that failed before it was sent has no transaction
		return err
	}
	if pc := c.PgConn(); !pc.IsClosed() && pc.TxStatus() != 'I' {
		return errors.Join(err, t.tx.Rollback(context.WithoutCancel(ctx)))
	}
	return err
}

// closeQueued reads the results of the queued statements sent, then runs
// rest (the statements after them), and closes br. A queued statement's
// error that the server reports, or that pgx found before sending (a
// statement that does not parse, an argument it cannot encode), comes
// back as a *store.QueuedStatementError naming it (a lost connection
// stays the database's failure).
func closeQueued(br pgx.BatchResults, sent []string, rest func() error) error {
	var err error
	ended := -1
	for i := 0; i < len(sent) && err == nil; i++ {
		tag, e := br.Exec()
		if e != nil {
			err = queuedError(e, i, sent)
		} else if ended < 0 && endsTx(tag) {
			ended = i
		}
	}
	if err == nil {
		err = checkQueued(br, ended, sent)
	}
	if err == nil && rest != nil {
		err = rest()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// queuedError is the error e of the i-th statement of sent: a
// *store.QueuedStatementError when it is the statement's fault. pgx
// reports a batch it could not prepare or build at its first statement,
// naming the one at fault.
func queuedError(e error, i int, sent []string) error {
	var pp pgx.ErrPreprocessingBatch
	if errors.As(e, &pp) {
		if j := slices.Index(sent, pp.SQL()); j >= 0 {
			i = j
		}
		return &store.QueuedStatementError{Index: i, SQL: sent[i], Err: e}
	}
	if pe := (*pgconn.PgError)(nil); errors.As(e, &pe) {
		return &store.QueuedStatementError{Index: i, SQL: sent[i], Err: e}
	}
	return e
}

// endsTx reports a statement that ends a transaction, from its tag
// (ROLLBACK TO SAVEPOINT's tag is ROLLBACK too).
func endsTx(tag pgconn.CommandTag) bool {
	t := tag.String()
	return t == "ROLLBACK" || t == "COMMIT" || strings.HasPrefix(t, "PREPARE TRANSACTION")
}

// checkQueued reads pgsql.CheckBatch's result: its failure says that a
// queued statement ended the transaction, the one at ended if known.
func checkQueued(br pgx.BatchResults, ended int, sent []string) error {
	_, err := br.Exec()
	if !isNotBatchTx(err) {
		return err
	}
	if ended < 0 {
		ended = len(sent) - 1
	}
	return &store.QueuedStatementError{Index: ended, SQL: sent[ended], Err: errQueuedEndedTx}
}

// isNotBatchTx reports pgsql.CheckBatch's failure (also in pgsql.CommitSQL).
func isNotBatchTx(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22P02" && strings.Contains(pe.Message, pgsql.NotBatchTx)
}
