package txinbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/store"
)

// Offsets as the inbox.
//
// When a message's position in its partition is its identity (a Kafka
// record keyed on its offset) and the partition's messages are processed
// in order, the partition's checkpoint already says which messages are
// done: those at or below it. ProcessOffsets writes no inbox row; each
// batch transaction runs the handlers and moves the checkpoint from where
// the caller saw it to the batch's last position. That move is the claim:
// it locks the checkpoint, and a second consumer of the same partition (a
// zombie after a rebalance) waits for it, then finds it moved and rolls
// back (ErrCheckpointMoved), so no effect commits twice. A failed message
// stops the prefix: the transaction commits the messages before it and
// moves the checkpoint to the last of them, never past a Retry.

// OffsetCheckpoint is the partition ProcessOffsets works on: its
// Checkpoint (Positions strictly ascending) with the checkpoint as the
// caller saw it, which the batches move on from.
type OffsetCheckpoint struct {
	Checkpoint
	// Saved is the partition's checkpoint as the caller last saw it:
	// what Checkpoints returned, or the last ProcessOffsets; -1 when none
	// is saved.
	Saved int64
	// DeadLettered, when set, is called with the index (into the
	// messages) and Result of each message that this call dead-letters,
	// after its dead letter committed and before the checkpoint moves
	// past it: a source copies the message to a dead-letter destination
	// there (Kafka's dead-letter topic). Should the process die between
	// the two, the message runs again after the restart and is
	// dead-lettered and handed to DeadLettered again: at least once. An
	// error keeps the checkpoint before the message, which becomes a
	// Retry carrying the error. Defaults to nil: the checkpoint moves
	// past a dead letter at once.
	DeadLettered func(ctx context.Context, index int, res Result) error
}

// ErrCheckpointMoved is returned by ProcessOffsets when the partition's
// checkpoint is not at OffsetCheckpoint.Saved: another consumer processed
// the partition since. Nothing of the batch committed (the checkpoint
// ProcessOffsets returns is where its earlier batches left it); read the
// checkpoint again with Checkpoints: the messages at or below it are done.
var ErrCheckpointMoved = errors.New("txinbox: the partition's checkpoint moved (another consumer processed the partition): read it again with Checkpoints")

// errNoAdvancer says that the store cannot keep offsets as the inbox.
var errNoAdvancer = errors.New("txinbox: ProcessOffsets: the store's transactions do not implement store.CheckpointAdvancer")

// ProcessOffsets processes messages of one partition, in order, with
// offsets as the inbox: no inbox row is written, and each batch
// transaction (Config.MaxBatchSize messages) moves the partition's
// checkpoint with the effects. Messages at or below cp.Saved are
// Duplicates without running. It returns one Result per message and the
// partition's checkpoint as the call left it (cp.Saved if none moved it),
// with an error too: the Saved of the caller's next call, unless err is
// ErrCheckpointMoved (then read it again with Checkpoints). A message whose
// handler fails is a Retry (its attempts counted, dead-lettered after
// Config.MaxAttempts like any message: the checkpoint then moves past it),
// and every later message is a Retry without running, so the caller
// redelivers from the first message not acked. If err is non-nil, the
// messages whose Outcome is zero did not commit.
func (p *Processor[TTx]) ProcessOffsets(ctx context.Context, msgs []*Message, cp OffsetCheckpoint) ([]Result, int64, error) {
	if len(cp.Positions) != len(msgs) {
		return nil, cp.Saved, fmt.Errorf("txinbox: ProcessOffsets: %d positions for %d messages", len(cp.Positions), len(msgs))
	}
	if p.cfg.Effect != nil {
		return nil, cp.Saved, errors.New("txinbox: ProcessOffsets: Config.Effect runs in the inbox's claim, which offsets as the inbox do not make: use a handler")
	}
	for i := 1; i < len(cp.Positions); i++ {
		if cp.Positions[i] <= cp.Positions[i-1] {
			return nil, cp.Saved, fmt.Errorf("txinbox: ProcessOffsets: positions not ascending at index %d (%d after %d)",
				i, cp.Positions[i], cp.Positions[i-1])
		}
	}
	results := make([]Result, len(msgs))
	saved, start := cp.Saved, 0
	for start < len(msgs) && cp.Positions[start] <= saved {
		results[start] = Result{Outcome: Duplicate}
		start++
	}
	for start < len(msgs) {
		end := min(start+p.cfg.MaxBatchSize, len(msgs))
		ob := &offsetBatch{src: cp.Source, part: cp.Partition, msgs: msgs[start:end], pos: cp.Positions[start:end],
			res: results[start:end], first: start, deadLettered: cp.DeadLettered}
		acked, err := p.processOffsetBatch(ctx, ob, &saved)
		if err != nil {
			return results, saved, err
		}
		start += acked
		if start < end && results[start].Outcome == Retry { // the later messages wait for it
			for i := start + 1; i < len(msgs); i++ {
				results[i] = Result{Outcome: Retry, Err: errOrderedSkip, RetryAfter: p.cfg.Backoff(1)}
			}
			break
		}
	}
	return results, saved, nil
}

// offsetBatch is one transaction's messages of ProcessOffsets.
type offsetBatch struct {
	src  string
	part int32
	msgs []*Message
	pos  []int64
	res  []Result
	// first is the index of msgs[0] in ProcessOffsets' messages, for
	// deadLettered (OffsetCheckpoint.DeadLettered).
	first        int
	deadLettered func(ctx context.Context, index int, res Result) error
	// done is how many leading messages the transaction committed;
	// culprit the index of the message that failed (-1: none) with its
	// error.
	done    int
	culprit int
	herr    error
	// lost is set once a handler of this call lost its connection while
	// the database answered, lostAt the index of its message (-1: a
	// BatchHandler's, the message not known), losses how many times: a
	// next loss of the same message (or of any, once the message was not
	// known or after three) is blamed (see answers).
	lost           bool
	lostAt, losses int
}

// processOffsetBatch runs one batch with its hooks and transient retries,
// records the culprit's attempt after the commit, and returns how many
// leading messages are acked.
func (p *Processor[TTx]) processOffsetBatch(ctx context.Context, ob *offsetBatch, saved *int64) (acked int, err error) {
	var ends []func(error)
	for _, h := range p.startHooks {
		var end func(error)
		ctx, end = h.OnBatchStart(ctx, len(ob.msgs))
		ends = append(ends, end)
	}
	defer func() {
		for _, end := range ends {
			end(err)
		}
	}()
	p.fillDefaults(ob.msgs)
	info := BatchInfo{Size: len(ob.msgs)}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		ob.done, ob.culprit, ob.herr = 0, -1, nil
		err = p.runOffsets(ctx, ob, *saved, &info)
		if err == nil || !p.driver.IsTransient(err) || attempt >= p.cfg.TransientRetries || ctx.Err() != nil {
			break
		}
		info.Transient++
	}
	info.Duration, info.Err, info.New = time.Since(start), err, ob.done
	if err == nil {
		acked, err = p.offsetOutcomes(ctx, ob, saved)
	}
	for _, h := range p.batchHooks {
		h.OnBatch(ctx, info)
	}
	if err != nil {
		return acked, fmt.Errorf("txinbox: batch of %d messages not committed: %w", len(ob.msgs), err)
	}
	reported := ob.done // the committed messages, and the culprit's outcome
	if ob.culprit >= 0 {
		reported = ob.culprit + 1
	}
	for i, m := range ob.msgs[:min(reported, len(ob.msgs))] {
		for _, h := range p.outcomeHooks {
			h.OnOutcome(ctx, m, ob.res[i])
		}
	}
	return acked, nil
}

// fillDefaults fills in the Scope and ReceivedAt of messages that lack
// them, as prepare does.
func (p *Processor[TTx]) fillDefaults(msgs []*Message) {
	now := p.cfg.Now()
	for _, m := range msgs {
		if m.Scope == "" {
			m.Scope = p.cfg.Scope
		}
		if m.ReceivedAt.IsZero() {
			m.ReceivedAt = now
		}
	}
}

// offsetOutcomes sets the results of a committed batch. The culprit's
// failed attempt is recorded; when that dead-letters it, the checkpoint
// moves past it in a transaction of its own, so that a restart does not
// run it again.
func (p *Processor[TTx]) offsetOutcomes(ctx context.Context, ob *offsetBatch, saved *int64) (int, error) {
	if ob.done > 0 {
		*saved = ob.pos[ob.done-1]
	}
	for i := range ob.done {
		ob.res[i] = Result{Outcome: Processed}
	}
	if ob.culprit < 0 {
		return ob.done, nil
	}
	m := ob.msgs[ob.culprit]
	h := m.PayloadHash()
	it := &item{msg: m, row: &store.ClaimRow{Key: store.Key{Scope: m.Scope, MessageID: m.ID}, Source: m.Source,
		SourcePosition: m.SourcePosition, PartitionKey: m.PartitionKey, PayloadHash: h[:], ReceivedAt: m.ReceivedAt}}
	p.markFailed(it, ob.herr)
	p.afterCommit(ctx, &batch{items: []*item{it}})
	ob.res[ob.culprit] = it.res
	if !it.res.Outcome.Ack() {
		return ob.done, nil
	}
	// Dead-lettered now, or (an inbox row of the key from before this
	// mode) a duplicate or drift: acked either way, so the checkpoint
	// moves past it; a Retry alone holds the partition.
	if err := p.movePast(ctx, ob, *saved, it.res); err != nil {
		// Not acked: redelivered, it fails again and is found
		// dead-lettered (RecordFailures does not store it twice).
		ob.res[ob.culprit] = Result{Outcome: Retry, Err: err, RetryAfter: p.cfg.Backoff(1)}
		return ob.done, nil
	}
	*saved = ob.pos[ob.culprit]
	return ob.done + 1, nil
}

// movePast hands a dead-lettered culprit to OffsetCheckpoint.DeadLettered,
// then moves the checkpoint past it. The copy goes out first: once the
// checkpoint is past the message, nothing would run it again.
func (p *Processor[TTx]) movePast(ctx context.Context, ob *offsetBatch, saved int64, res Result) error {
	if res.Outcome == DeadLettered && ob.deadLettered != nil {
		if err := ob.deadLettered(ctx, ob.first+ob.culprit, res); err != nil {
			return err
		}
	}
	return p.skipDeadLetter(ctx, ob, saved)
}

// skipDeadLetter moves the checkpoint past the dead-lettered culprit.
func (p *Processor[TTx]) skipDeadLetter(ctx context.Context, ob *offsetBatch, saved int64) error {
	tx, err := p.driver.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	adv, ok := tx.(store.CheckpointAdvancer)
	if !ok {
		return errNoAdvancer
	}
	moved, err := adv.AdvanceCheckpoint(ctx, p.offsetCheckpoint(ob, ob.pos[ob.culprit]), saved)
	if err == nil && !moved {
		err = ErrCheckpointMoved
	}
	if err != nil {
		return err
	}
	return commitTx(ctx, tx)
}

func (p *Processor[TTx]) offsetCheckpoint(ob *offsetBatch, pos int64) store.Checkpoint {
	return store.Checkpoint{Scope: p.cfg.Scope, Source: ob.src, Partition: ob.part, Position: pos}
}

// runOffsets is one transaction attempt: the checkpoint moves to the
// batch's last position as its first statement (with the BEGIN, one round
// trip), the handlers run, and it commits. When a handler fails, the work
// is rolled back and redone message by message (offsetPrefix).
func (p *Processor[TTx]) runOffsets(ctx context.Context, ob *offsetBatch, saved int64, info *BatchInfo) error {
	tx, err := p.beginDeferred(ctx, p.offsetCheckpoint(ob, ob.pos[len(ob.pos)-1]), saved)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	handlerStart := time.Now()
	culprit, herr := p.offsetsOptimistic(ctx, tx, ob.msgs)
	info.HandlerDuration = time.Since(handlerStart)
	if errors.Is(herr, store.ErrCheckpointMoved) { // a handler's statement began the deferred move
		return ErrCheckpointMoved
	}
	if herr == nil {
		commitStart := time.Now()
		err := commitTx(ctx, tx)
		info.CommitDuration = time.Since(commitStart)
		if err == nil {
			ob.done = len(ob.msgs)
		}
		if errors.Is(err, store.ErrCheckpointMoved) {
			return ErrCheckpointMoved
		}
		qe, bt := (*store.QueuedStatementError)(nil), (*store.BrokenTxError)(nil)
		if !errors.As(err, &qe) && !errors.As(err, &bt) {
			return err
		}
		herr = err // a handler's queued statement failed, or it ended the transaction: found as a handler's error
	}
	up, err := p.rollbackFailed(ctx, tx, herr)
	if err != nil {
		return err
	}
	info.Redone = true
	if up {
		ob.lost, ob.lostAt, ob.losses = true, culprit, ob.losses+1
	}
	if culprit < 0 { // a BatchHandler failed: which message is not known
		return p.offsetPrefix(ctx, ob, saved, len(ob.msgs))
	}
	if up {
		// Its first loss may have been an outage's (every session
		// ended): it runs again, last of the redone prefix, and is
		// blamed only if it loses its connection there too.
		return p.offsetPrefix(ctx, ob, saved, culprit+1)
	}
	// The failing message does not run again in this batch (a failure
	// that passes would otherwise go uncounted): the messages before it
	// are redone, and it is the culprit unless one of them fails now.
	ob.culprit, ob.herr = culprit, herr
	return p.offsetPrefix(ctx, ob, saved, culprit)
}

// offsetsOptimistic runs the handlers of a batch in its transaction and,
// for a per-message Handler, returns the index of the message that failed
// (-1: none, or a BatchHandler failed).
func (p *Processor[TTx]) offsetsOptimistic(ctx context.Context, tx store.Tx[TTx], msgs []*Message) (int, error) {
	if p.cfg.BatchHandler != nil {
		return -1, p.afterHandler(tx, p.callHandler(ctx, tx.Tx(), msgs))
	}
	for i, m := range msgs {
		if err := p.afterHandler(tx, p.callHandler(ctx, tx.Tx(), []*Message{m})); err != nil {
			return i, err
		}
	}
	return -1, nil
}

// beginDeferred begins the optimistic transaction of ProcessOffsets: the
// checkpoint's move travels with its first round trip where the store can
// defer it (store.DeferredAdvancer: with handlers that queue their
// statements, the batch is one round trip), else it moves first
// (beginOffsets).
func (p *Processor[TTx]) beginDeferred(ctx context.Context, cp store.Checkpoint, saved int64) (store.Tx[TTx], error) {
	tx, err := p.driver.Begin(ctx)
	if err != nil {
		return nil, err
	}
	da, ok := tx.(store.DeferredAdvancer)
	if !ok {
		tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // nothing began
		tx, _, err = p.beginOffsets(ctx, cp, saved)
		return tx, err
	}
	da.DeferAdvance(cp, saved)
	return tx, nil
}

// beginOffsets begins a transaction of ProcessOffsets by moving the
// checkpoint from saved to cp.Position.
func (p *Processor[TTx]) beginOffsets(ctx context.Context, cp store.Checkpoint, saved int64) (store.Tx[TTx], store.CheckpointAdvancer, error) {
	tx, err := p.driver.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	adv, ok := tx.(store.CheckpointAdvancer)
	if !ok {
		tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // nothing began
		return nil, nil, errNoAdvancer
	}
	moved, err := adv.AdvanceCheckpoint(ctx, cp, saved)
	if err == nil && !moved {
		err = ErrCheckpointMoved
	}
	if err != nil {
		tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the error is err
		return nil, nil, err
	}
	return tx, adv, nil
}

// offsetPrefix redoes the batch after a handler failed: each of the first
// limit messages runs under a savepoint, up to the first that fails; the
// transaction commits those before it, with the checkpoint at the last of
// them. A handler that loses the transaction itself is the culprit, and
// the prefix before it is redone in a new transaction.
func (p *Processor[TTx]) offsetPrefix(ctx context.Context, ob *offsetBatch, saved int64, limit int) error {
	// The checkpoint is locked where it is before any handler runs; it
	// moves once the prefix is known.
	tx, adv, err := p.beginOffsets(ctx, p.offsetCheckpoint(ob, saved), saved)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	for i := range limit {
		if err := tx.Savepoint(ctx); err != nil {
			return err
		}
		herr := p.afterHandler(tx, p.callFlushed(ctx, tx, ob.msgs[i]))
		if herr == nil {
			err := tx.ReleaseSavepoint(ctx)
			if bt := (*store.BrokenTxError)(nil); !errors.As(err, &bt) || !bt.Lost {
				if err != nil {
					return err
				}
				continue
			}
			herr = fmt.Errorf("txinbox: %w", err) // its savepoint is gone: ROLLBACK AND CHAIN as SQL
		}
		// A connection closed by the server while the database answers:
		// the first loss of this call (an outage may have struck it) runs
		// the prefix again; a second one is the culprit (see answers).
		df := (*dbFault)(nil)
		fault := errors.As(herr, &df)
		if fault {
			// Lost already: rolled back before the ping, which must not
			// wait for its connection (a pool of one).
			tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the error is herr
		}
		if fault && !p.answers(ctx, herr) {
			return herr
		}
		if fault && (!ob.lost || ob.lostAt >= 0 && ob.lostAt != i && ob.losses < 3) {
			ob.lost, ob.lostAt, ob.losses = true, i, ob.losses+1
			return p.offsetPrefix(ctx, ob, saved, limit)
		}
		if fault {
			herr = fmt.Errorf("txinbox: its handler's connection was closed twice in a row while the database answered "+
				"(pg_terminate_backend, or a statement that crashes its backend?): %w", herr)
		}
		ob.culprit, ob.herr = i, herr
		if bt := (*store.BrokenTxError)(nil); fault || errors.As(herr, &bt) && bt.Lost {
			// The prefix before it is redone; a message of it that fails
			// this time becomes the culprit instead.
			tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // lost already
			return p.offsetPrefix(ctx, ob, saved, i)
		}
		if err := tx.RollbackToSavepoint(ctx); err != nil {
			return errors.Join(err, herr)
		}
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), herr)
		}
		limit = i
		break
	}
	if limit == 0 {
		return nil // nothing to commit: the first message failed
	}
	if _, err := adv.AdvanceCheckpoint(ctx, p.offsetCheckpoint(ob, ob.pos[limit-1]), saved); err != nil {
		return err
	}
	if err := commitTx(ctx, tx); err != nil {
		return err
	}
	ob.done = limit
	return nil
}
