package txinbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/store"
)

// errOrderedSkip is the Result.Err of a message not run because an earlier
// message with the same partition key failed (Config.Ordered).
var errOrderedSkip = errors.New("txinbox: not run: an earlier message with the same partition key failed")

// runBatch runs one transaction for the batch. The optimistic pass claims
// every key with one statement and runs the handlers without savepoints;
// only when a handler fails is the work rolled back and redone with a
// savepoint per message, so that savepoints cost nothing on the happy path.
func (p *Processor[TTx]) runBatch(ctx context.Context, b *batch, info *BatchInfo) error {
	// A refused message must fail in a transaction (callHandler), which
	// rolls back its claim and effect. With a checkpoint, the autocommitted
	// form records the drift in its statement (a checkpoint must not move
	// past a drifted copy whose drift is not recorded with it), which
	// repeats inside the batch would need done in Go; and it commits
	// nothing when it could not answer for every key: then the batch runs
	// in a transaction.
	if ec, ok := p.driver.(store.EffectCommitter); ok && p.cfg.Effect != nil && len(b.noID) == 0 && !b.refused() && !p.cfg.FailFastInFlight &&
		(b.cp == nil || len(b.repeats) == 0) {
		if err := p.runCommitted(ctx, ec, b, info); !errors.Is(err, store.ErrUnanswered) {
			return err
		}
	}
	tx, err := p.driver.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit

	p.planCheckpoint(tx, b)
	claims, err := p.claim(ctx, tx, b, b.items)
	if err != nil {
		return err
	}
	var fresh []*item
	var drift []store.DriftRow
	for i, it := range b.items {
		if d, ok := p.classify(it, claims[i]); ok {
			drift = append(drift, d)
		}
		if claims[i].Status == store.ClaimNew {
			fresh = append(fresh, it)
		}
	}
	info.New = len(fresh)
	if err := p.recordDrift(ctx, tx, drift); err != nil {
		return err
	}
	if err := p.readReplies(ctx, tx, b.items); err != nil {
		return err
	}
	handlerStart := time.Now()
	culprit, herr := p.runOptimistic(ctx, tx, fresh)
	if len(fresh) > 0 {
		b.handlerTime += time.Since(handlerStart)
	}
	if herr == nil {
		for _, it := range fresh {
			it.res = Result{Outcome: Processed}
		}
		// A statement a handler queued fails at the commit (in its
		// round trip), or the commit finds that a handler ended the
		// transaction: a handler's failure, redone with savepoints.
		var qe *store.QueuedStatementError
		var bt *store.BrokenTxError
		if herr = p.commit(ctx, tx, b); !errors.As(herr, &qe) && !errors.As(herr, &bt) {
			return herr
		}
	}
	up, err := p.rollbackFailed(ctx, tx, herr)
	if err != nil {
		return err
	}
	info.Redone = true
	b.resetClassification()
	switch {
	case culprit != nil && up:
		p.suspect(b, culprit, herr)
	case culprit != nil:
		p.markFailed(culprit, herr)
		culprit.excluded = true
	}
	return p.runWithSavepoints(ctx, b)
}

// rollbackFailed rolls back a transaction whose handler failed with herr.
// It returns the error the call must end with (the rollback failed, the
// context ended, the database or the network failed, a transient error),
// or nil when the work is to be redone a message at a time; up reports a
// connection closed by the server or the network while the database
// answers (see answers): the handler's message is then a suspect.
func (p *Processor[TTx]) rollbackFailed(ctx context.Context, tx store.Tx[TTx], herr error) (up bool, err error) {
	var bt *store.BrokenTxError
	broken := errors.As(herr, &bt)
	var df *dbFault
	fault := errors.As(herr, &df)
	if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil && (!broken || !bt.Lost) && !fault {
		return false, errors.Join(err, herr)
	}
	if fault && p.answers(ctx, herr) {
		return true, nil
	}
	if ctx.Err() != nil || fault || (!broken && p.driver.IsTransient(herr)) {
		return false, errors.Join(ctx.Err(), herr)
	}
	return false, nil
}

// afterHandler returns the error of a handler that returned herr, with
// what the store's Check found: a handler that broke its transaction
// (swallowed a failed statement, ended it, lost its connection to its own
// deadline) fails with a *store.BrokenTxError naming what it did.
func (p *Processor[TTx]) afterHandler(tx store.Tx[TTx], herr error) error {
	cerr := tx.Check(herr)
	if errors.Is(cerr, store.ErrCheckpointMoved) {
		return cerr
	}
	var bt *store.BrokenTxError
	if !errors.As(cerr, &bt) {
		return herr
	}
	// A connection closed during the handler is blamed on it unless its
	// error says that the server or the network closed it (a database
	// outage is not the message's fault: Process returns the error).
	switch {
	case bt.Aborted && herr != nil:
		return herr // the handler returned its failed statement's error
	case bt.DatabaseFault:
		return &dbFault{herr}
	case herr != nil:
		return fmt.Errorf("txinbox: %w (the handler returned: %v)", bt, herr)
	}
	return fmt.Errorf("txinbox: %w", bt)
}

// dbFault is a handler's error that is the database's fault, not the
// message's: the server or the network closed its connection.
type dbFault struct{ err error }

func (e *dbFault) Error() string { return e.err.Error() }
func (e *dbFault) Unwrap() error { return e.err }

// errRedo restarts the savepoint pass: a handler lost the transaction,
// and everything it held was rolled back with it.
var errRedo = errors.New("txinbox: transaction lost by a handler; redo")

// runOptimistic runs the handlers of the new messages with no savepoint. On
// failure it returns the message at fault when it is known (per-message
// handler) or nil (batch handler).
func (p *Processor[TTx]) runOptimistic(ctx context.Context, tx store.Tx[TTx], fresh []*item) (*item, error) {
	if len(fresh) == 0 {
		return nil, nil
	}
	if p.cfg.BatchHandler != nil {
		msgs := make([]*Message, len(fresh))
		for i, it := range fresh {
			msgs[i] = it.msg
		}
		return nil, p.afterHandler(tx, p.callHandler(ctx, tx.Tx(), msgs))
	}
	for _, it := range fresh {
		if err := p.afterHandler(tx, p.callHandler(ctx, tx.Tx(), []*Message{it.msg})); err != nil {
			return it, err
		}
	}
	return nil, nil
}

// runWithSavepoints redoes the batch after a handler failed: each message is
// claimed and run under its own savepoint, so a failing handler rolls back
// only its own claim and effects.
func (p *Processor[TTx]) runWithSavepoints(ctx context.Context, b *batch) error {
	for {
		err := p.savepointPass(ctx, b)
		if !errors.Is(err, errRedo) {
			return err
		}
		b.resetClassification() // the culprit is excluded: at most one redo per message
	}
}

func (p *Processor[TTx]) savepointPass(ctx context.Context, b *batch) error {
	tx, err := p.driver.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit

	blocked := map[string]error{}
	for _, it := range b.items {
		if it.excluded {
			if p.cfg.Ordered {
				blocked[it.row.PartitionKey] = it.res.Err
			}
			continue
		}
		if p.cfg.Ordered {
			if _, ok := blocked[it.row.PartitionKey]; ok {
				it.res = Result{Outcome: Retry, Err: errOrderedSkip, RetryAfter: p.cfg.Backoff(1)}
				continue
			}
		}
		failed, err := p.runOne(ctx, tx, b, it)
		if err != nil {
			return err
		}
		if failed && p.cfg.Ordered {
			blocked[it.row.PartitionKey] = it.res.Err
		}
	}
	return p.commit(ctx, tx, b)
}

// runOne claims and runs one message under a savepoint. It reports whether
// the handler failed; err is a database error that ends the transaction.
func (p *Processor[TTx]) runOne(ctx context.Context, tx store.Tx[TTx], b *batch, it *item) (failed bool, err error) {
	if err := tx.Savepoint(ctx); err != nil {
		return false, err
	}
	claims, err := p.claim(ctx, tx, b, []*item{it})
	if err != nil {
		return false, err
	}
	if d, ok := p.classify(it, claims[0]); ok {
		if err := p.recordDrift(ctx, tx, []store.DriftRow{d}); err != nil {
			return false, err
		}
	}
	if claims[0].Status != store.ClaimNew {
		if err := p.readReplies(ctx, tx, []*item{it}); err != nil {
			return false, err
		}
		return false, tx.ReleaseSavepoint(ctx)
	}
	return p.runHandlerOne(ctx, tx, b, it)
}

// runHandlerOne runs the handler of a message claimed under its savepoint
// and releases it, or rolls it back if the handler failed.
func (p *Processor[TTx]) runHandlerOne(ctx context.Context, tx store.Tx[TTx], b *batch, it *item) (failed bool, err error) {
	handlerStart := time.Now()
	herr := p.afterHandler(tx, p.callFlushed(ctx, tx, it.msg))
	b.handlerTime += time.Since(handlerStart)
	if herr == nil {
		err := tx.ReleaseSavepoint(ctx)
		if bt := (*store.BrokenTxError)(nil); !errors.As(err, &bt) || !bt.Lost {
			it.res = Result{Outcome: Processed}
			return false, err
		}
		// Its savepoint is gone: it ended the transaction and began
		// another (ROLLBACK AND CHAIN as SQL).
		herr = fmt.Errorf("txinbox: %w", err)
	}
	if df := (*dbFault)(nil); errors.As(herr, &df) {
		// Lost already: rolled back first, so that the ping does not
		// wait for the connection (a pool of one).
		tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the error is herr
		if !p.answers(ctx, herr) {
			return false, herr
		}
		p.suspect(b, it, herr)
		return true, errRedo
	}
	if bt := (*store.BrokenTxError)(nil); errors.As(herr, &bt) && bt.Lost {
		p.markFailed(it, herr)
		it.excluded = true
		return true, errRedo
	}
	if err := tx.RollbackToSavepoint(ctx); err != nil {
		return false, errors.Join(err, herr)
	}
	if ctx.Err() != nil {
		return false, errors.Join(ctx.Err(), herr)
	}
	p.markFailed(it, herr)
	it.excluded = true // not run again by a redo of this pass
	return true, nil
}

// callFlushed runs the handler of one message under its savepoint and
// sends the statements it queued (store.StatementQueue) before the
// savepoint is released, so that their failure is its own.
func (p *Processor[TTx]) callFlushed(ctx context.Context, tx store.Tx[TTx], m *Message) error {
	if err := p.callHandler(ctx, tx.Tx(), []*Message{m}); err != nil {
		return err
	}
	if sq, ok := tx.(store.StatementQueue); ok {
		return sq.FlushQueued(ctx)
	}
	return nil
}

// errNoEffectClaimer says that the store cannot run Config.Effect.
var errNoEffectClaimer = errors.New("txinbox: Config.Effect: the store's transactions do not implement store.EffectClaimer")

// claim claims the items' keys; with Config.Effect, in the statement that
// also runs the effect over the keys it inserts.
func (p *Processor[TTx]) claim(ctx context.Context, tx store.Tx[TTx], b *batch, items []*item) ([]store.ClaimResult, error) {
	claim, res, err := p.lockInFlight(ctx, tx, items)
	if err != nil || len(claim) == 0 {
		return res, err
	}
	var got []store.ClaimResult
	if p.cfg.Effect == nil {
		got, err = tx.Claim(ctx, b.claimRowsOf(claim))
	} else if ec, ok := tx.(store.EffectClaimer); !ok {
		return nil, errNoEffectClaimer
	} else {
		got, err = ec.ClaimWithEffect(ctx, b.effectRowsOf(claim), p.cfg.Effect.Statements)
	}
	if err != nil || res == nil {
		return got, err
	}
	// Spread the claimed keys' results among the keys in flight.
	j := 0
	for i := range res {
		if res[i].Status != claimInFlight {
			res[i] = got[j]
			j++
		}
	}
	return res, nil
}

// claimRowsOf are the claim rows of items, b's own when items are all of
// b's.
func (b *batch) claimRowsOf(items []*item) []store.ClaimRow {
	if b.whole(items) {
		return b.claimRows
	}
	rows := make([]store.ClaimRow, len(items))
	for i, it := range items {
		rows[i] = *it.row
	}
	return rows
}

// effectRowsOf are the claim rows of items with what a declarative effect
// reads of their messages, b's own when items are all of b's.
func (b *batch) effectRowsOf(items []*item) []store.EffectRow {
	if b.whole(items) {
		return b.effectRows
	}
	rows := make([]store.EffectRow, len(items))
	for i, it := range items {
		rows[i] = store.EffectRow{ClaimRow: *it.row, Payload: it.msg.Payload, Headers: it.headers}
	}
	return rows
}

// whole reports whether items are b.items.
func (b *batch) whole(items []*item) bool {
	return len(items) == len(b.items) && (len(items) == 0 || &items[0] == &b.items[0])
}

// storeCheckpoint is the checkpoint of b's partition at pos.
func (p *Processor[TTx]) storeCheckpoint(b *batch, pos int64) store.Checkpoint {
	return store.Checkpoint{Scope: p.cfg.Scope, Source: b.cp.Source, Partition: b.cp.Partition, Position: pos}
}

// planCheckpoint tells a store that can save it with the claim (one
// statement less) the checkpoint that the batch saves if every message is
// acked: its last position.
func (p *Processor[TTx]) planCheckpoint(tx store.Tx[TTx], b *batch) {
	if pl, ok := tx.(store.CheckpointPlanner); ok && b.cp != nil && len(b.cp.Positions) > 0 {
		pl.PlanCheckpoint(p.storeCheckpoint(b, b.cp.Positions[len(b.cp.Positions)-1]))
	}
}

// runCommitted runs a batch of a declarative effect (Config.Effect) as one
// statement that commits on its own: the claim and the effect (every
// outcome is acked: no handler can fail), and the checkpoint at the
// batch's last position with the drift it finds. Without a checkpoint,
// the drift is recorded afterwards, in a transaction of its own; should
// that fail, Process fails, nothing is acked and the redelivery records
// it. store.ErrUnanswered: nothing committed, the batch is to run in a
// transaction.
func (p *Processor[TTx]) runCommitted(ctx context.Context, ec store.EffectCommitter, b *batch, info *BatchInfo) error {
	var cp *store.Checkpoint
	if b.cp != nil {
		c := p.storeCheckpoint(b, b.cp.Positions[len(b.cp.Positions)-1])
		cp = &c
	}
	start := time.Now()
	cctx, cancel := commitContext(ctx)
	claims, err := ec.CommitEffect(cctx, b.effectRowsOf(b.items), p.cfg.Effect.Statements, cp, p.cfg.Now())
	err = commitErr(cctx, err)
	cancel()
	b.commitTime = time.Since(start)
	if err != nil {
		return err
	}
	var drift []store.DriftRow
	for i, it := range b.items {
		if d, ok := p.classify(it, claims[i]); ok {
			drift = append(drift, d)
		}
		if claims[i].Status == store.ClaimNew {
			it.res = Result{Outcome: Processed}
			info.New++
		}
	}
	if cp != nil {
		return nil // its drift committed with it
	}
	drift = append(drift, b.repeatDrift(func() store.DriftRow { return store.DriftRow{DetectedAt: p.cfg.Now()} })...)
	if len(drift) == 0 {
		return nil
	}
	tx, err := p.driver.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if err := tx.RecordDrift(ctx, drift); err != nil {
		return err
	}
	return commitTx(ctx, tx)
}

// errDeadLetteredEarlier is the Result.Err of a delivery of a key that is
// in the dead-letter table.
var errDeadLetteredEarlier = errors.New("txinbox: message was dead-lettered earlier")

// classify sets the outcome of a key that the claim did not insert and
// returns a drift row when the stored payload hash differs.
func (p *Processor[TTx]) classify(it *item, c store.ClaimResult) (store.DriftRow, bool) {
	switch c.Status {
	case claimInFlight:
		it.res = Result{Outcome: InFlight, RetryAfter: p.cfg.Backoff(1)}
		return store.DriftRow{}, false
	case store.ClaimDeadLettered:
		// Another payload than the dead letter's is recorded as drift
		// against the dead letter's hash; the same one is a plain repeat.
		it.stored = c.StoredHash
		if c.StoredHash == nil || bytes.Equal(c.StoredHash, it.row.PayloadHash) {
			it.res = Result{Outcome: DeadLettered, Err: errDeadLetteredEarlier}
			return store.DriftRow{}, false
		}
		it.res = Result{Outcome: Drift, Err: errDeadLetteredEarlier}
		return store.DriftRow{
			Key: it.row.Key, Source: it.row.Source, SourcePosition: it.row.SourcePosition,
			StoredHash: c.StoredHash, ReceivedHash: it.row.PayloadHash, DetectedAt: p.cfg.Now(),
		}, true
	case store.ClaimExisting:
		it.stored = c.StoredHash
		if bytes.Equal(c.StoredHash, it.row.PayloadHash) {
			it.res = Result{Outcome: Duplicate}
			return store.DriftRow{}, false
		}
		it.res = Result{Outcome: Drift}
		return store.DriftRow{
			Key: it.row.Key, Source: it.row.Source, SourcePosition: it.row.SourcePosition,
			StoredHash: c.StoredHash, ReceivedHash: it.row.PayloadHash, DetectedAt: p.cfg.Now(),
		}, true
	}
	return store.DriftRow{}, false
}

func (p *Processor[TTx]) markFailed(it *item, err error) {
	it.res = Result{Outcome: Retry, Err: err}
	it.failed = true
}

func (p *Processor[TTx]) recordDrift(ctx context.Context, tx store.Tx[TTx], rows []store.DriftRow) error {
	if len(rows) == 0 {
		return nil
	}
	return tx.RecordDrift(ctx, rows)
}

// commit writes what depends on the batch's final outcomes (drift of
// in-batch repeats, dead letters of messages refused before the claim, the
// checkpoint) and commits.
func (p *Processor[TTx]) commit(ctx context.Context, tx store.Tx[TTx], b *batch) error {
	drift := b.repeatDrift(func() store.DriftRow { return store.DriftRow{DetectedAt: p.cfg.Now()} })
	if err := p.recordDrift(ctx, tx, drift); err != nil {
		return err
	}
	if len(b.noID) > 0 {
		dls := make([]store.DeadLetterRow, len(b.noID))
		for i, nm := range b.noID {
			dls[i] = p.deadLetterRow(nm.msg, nm.hash, 0, nm.reason, nm.err.Error())
			nm.res = Result{Outcome: DeadLettered, Err: nm.err}
		}
		if err := tx.DeadLetter(ctx, dls); err != nil {
			return err
		}
	}
	if err := p.saveReplies(ctx, tx, b); err != nil {
		return err
	}
	if pos, ok := b.checkpoint(); ok {
		if err := tx.SaveCheckpoint(ctx, p.storeCheckpoint(b, pos)); err != nil {
			return err
		}
	}
	commitStart := time.Now()
	err := commitTx(ctx, tx)
	b.commitTime = time.Since(commitStart)
	return err
}

// resetClassification forgets what the rolled-back optimistic pass found;
// the savepoint pass claims again and may find otherwise.
func (b *batch) resetClassification() {
	for _, it := range b.items {
		if !it.excluded {
			it.res, it.stored, it.failed = Result{}, nil, false
		}
	}
}
