package txinbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/txinbox/txinbox/store"
)

// Processor turns deliveries into exactly-once side effects: it claims each
// message's (scope, id) in the inbox table and runs the handler in the same
// database transaction, a batch at a time. It is safe for concurrent use.
//
// TTx is the store's transaction type: pgx.Tx with pgstore, *sql.Tx with
// sqlitestore.
type Processor[TTx any] struct {
	driver store.Driver[TTx]
	cfg    Config[TTx]

	outcomeHooks []OutcomeHook
	batchHooks   []BatchHook
	startHooks   []BatchStartHook
	ackHooks     []AckHook
	// attemptLog bounds the log lines of failed attempts per scope.
	attemptLog *logLimiter

	batcherOnce sync.Once
	reqs        chan *submitRequest
	closing     chan struct{}
	closeOnce   sync.Once
	workers     sync.WaitGroup
}

// NewProcessor returns a Processor that stores its inbox through driver.
func NewProcessor[TTx any](driver store.Driver[TTx], cfg Config[TTx]) (*Processor[TTx], error) {
	if driver == nil {
		return nil, errors.New("txinbox: NewProcessor: driver is nil")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Processor[TTx]{
		driver:     driver,
		cfg:        cfg,
		reqs:       make(chan *submitRequest),
		closing:    make(chan struct{}),
		attemptLog: newLogLimiter(attemptLogLines, attemptLogWindow),
	}
	for i, h := range cfg.Hooks {
		used := false
		if oh, ok := h.(OutcomeHook); ok {
			p.outcomeHooks, used = append(p.outcomeHooks, oh), true
		}
		if bh, ok := h.(BatchHook); ok {
			p.batchHooks, used = append(p.batchHooks, bh), true
		}
		if sh, ok := h.(BatchStartHook); ok {
			p.startHooks, used = append(p.startHooks, sh), true
		}
		if ah, ok := h.(AckHook); ok {
			p.ackHooks, used = append(p.ackHooks, ah), true
		}
		if !used {
			return nil, &ConfigError{fmt.Sprintf("Hooks[%d]", i), fmt.Sprintf("%T implements no hook interface", h)}
		}
	}
	return p, nil
}

// Process processes msgs in transactions of at most Config.MaxBatchSize
// messages and returns one Result per message, aligned with msgs.
//
// If err is non-nil, some transaction did not commit: the messages whose
// Result.Outcome is zero were not processed and must not be acked; the
// others were committed by earlier transactions and may be acked. A source
// acks exactly the messages whose Outcome.Ack() is true.
//
// Process fills in the Scope and ReceivedAt of messages that lack them.
//
// When ctx ends, Process stops at the next step of the batch in flight,
// which rolls back, except its commit: a commit already sent is awaited
// (up to CommitWait after ctx ended, then abandoned with
// ErrCommitUnknown), so that when Process returns, the database has done
// what Process reports and nothing of the call commits later. A consumer
// stopped by its context can then be counted, truncated or migrated at
// once.
func (p *Processor[TTx]) Process(ctx context.Context, msgs []*Message) ([]Result, error) {
	return p.process(ctx, msgs, nil)
}

// Checkpoint names one partition of a source and the positions of the
// messages handed with it, so that the batches' own transactions record
// how far the partition has been processed: a Kafka partition's watermark
// that survives a lost offset commit. ProcessCheckpoint takes it as it is;
// ProcessOffsets takes it within an OffsetCheckpoint. Checkpoints reads the
// saved positions back, keyed by Partition.
type Checkpoint struct {
	// Source names the source, e.g. the Kafka topic.
	Source string
	// Partition numbers the partition within Source, e.g. a Kafka
	// partition.
	Partition int32
	// Positions are the messages' positions (offsets), aligned with the
	// messages and ascending (strictly, for ProcessOffsets).
	Positions []int64
}

// ProcessCheckpoint is Process for messages of one partition: each batch
// transaction also saves the position of the last message of the batch's
// longest prefix of acked outcomes (it never passes a Retry), so that
// after a restart everything at or below the saved position is known to be
// committed. Read the positions back with Checkpoints.
func (p *Processor[TTx]) ProcessCheckpoint(ctx context.Context, msgs []*Message, cp Checkpoint) ([]Result, error) {
	if len(cp.Positions) != len(msgs) {
		return nil, fmt.Errorf("txinbox: ProcessCheckpoint: %d positions for %d messages", len(cp.Positions), len(msgs))
	}
	return p.process(ctx, msgs, &cp)
}

// Checkpoints returns the saved position of each partition of source in
// the processor's scope, keyed by Checkpoint.Partition.
func (p *Processor[TTx]) Checkpoints(ctx context.Context, source string) (map[int32]int64, error) {
	return p.driver.Checkpoints(ctx, p.cfg.Scope, source)
}

func (p *Processor[TTx]) process(ctx context.Context, msgs []*Message, cp *Checkpoint) ([]Result, error) {
	results := make([]Result, len(msgs))
	// blocked holds, with Config.Ordered, the partition keys of messages
	// left for Retry by an earlier batch of this call: later messages with
	// such a key are not run, so order holds across batches too.
	var blocked map[string]bool
	for start := 0; start < len(msgs); start += p.cfg.MaxBatchSize {
		end := min(start+p.cfg.MaxBatchSize, len(msgs))
		chunk, res := msgs[start:end], results[start:end]
		var chunkCP *Checkpoint
		if cp != nil {
			chunkCP = &Checkpoint{Source: cp.Source, Partition: cp.Partition, Positions: cp.Positions[start:end]}
		}
		if err := p.processChunk(ctx, chunk, res, chunkCP, blocked); err != nil {
			// The results of a batch that did not commit are zero (or
			// Retry); those of a split batch's halves that did are kept.
			return results, err
		}
		if cp != nil && !allAcked(res) {
			cp = nil // a later batch must not move the checkpoint past a Retry
		}
		if p.cfg.Ordered {
			for i, r := range res {
				if !r.Outcome.Ack() {
					if blocked == nil {
						blocked = map[string]bool{}
					}
					blocked[chunk[i].PartitionKey] = true
				}
			}
		}
	}
	return results, nil
}

// processChunk processes one batch, less the messages whose partition key
// is blocked: those are Retry without running. A checkpoint is never
// given with blocked keys (an earlier batch had a Retry).
func (p *Processor[TTx]) processChunk(ctx context.Context, msgs []*Message, results []Result, cp *Checkpoint, blocked map[string]bool) error {
	if len(blocked) == 0 {
		return p.processSplit(ctx, msgs, results, cp)
	}
	var run []*Message
	var at []int
	for i, m := range msgs {
		if blocked[m.PartitionKey] {
			results[i] = Result{Outcome: Retry, Err: errOrderedSkip, RetryAfter: p.cfg.Backoff(1)}
			continue
		}
		run, at = append(run, m), append(at, i)
	}
	if len(run) == 0 {
		return nil
	}
	sub := make([]Result, len(run))
	err := p.processSplit(ctx, run, sub, nil)
	for j, i := range at {
		results[i] = sub[j]
	}
	return err
}

// processSplit processes msgs as one batch. When the database refuses the
// batch for a reason that no handler reported (a deferred constraint or
// trigger failing at COMMIT, a value refused in the claim: see
// store.Refuser), it processes each half as a batch of its own, down to
// the message at fault, which fails alone (its attempt counted).
func (p *Processor[TTx]) processSplit(ctx context.Context, msgs []*Message, results []Result, cp *Checkpoint) error {
	err := p.processBatch(ctx, msgs, results, cp, false)
	if err == nil {
		return p.runSuspects(ctx, msgs, results)
	}
	r, ok := p.driver.(store.Refuser)
	if ctx.Err() != nil || !ok || !r.IsRefused(err) {
		return err
	}
	if len(msgs) == 1 {
		return p.failAlone(ctx, msgs[0], results, err)
	}
	mid := len(msgs) / 2
	var cp1, cp2 *Checkpoint
	if cp != nil {
		cp1 = &Checkpoint{Source: cp.Source, Partition: cp.Partition, Positions: cp.Positions[:mid]}
		cp2 = &Checkpoint{Source: cp.Source, Partition: cp.Partition, Positions: cp.Positions[mid:]}
	}
	if err := p.processSplit(ctx, msgs[:mid], results[:mid], cp1); err != nil {
		return err
	}
	var blocked map[string]bool
	if !allAcked(results[:mid]) {
		cp2 = nil // never past a Retry
		if p.cfg.Ordered {
			blocked = map[string]bool{}
			for i, res := range results[:mid] {
				if !res.Outcome.Ack() {
					blocked[msgs[i].PartitionKey] = true
				}
			}
		}
	}
	return p.processChunk(ctx, msgs[mid:], results[mid:], cp2, blocked)
}

// failAlone fails a message whose transaction of its own the database
// refused: an attempt is counted, then it is dead-lettered like any
// failure.
func (p *Processor[TTx]) failAlone(ctx context.Context, m *Message, results []Result, err error) error {
	b := p.prepare([]*Message{m}, p.encodesHeaders(ctx))
	if len(b.items) != 1 {
		return err // refused before any claim: nothing to count
	}
	p.markFailed(b.items[0], fmt.Errorf("txinbox: the database refused this message's transaction: %w", errors.Unwrap(err)))
	p.afterCommit(ctx, b)
	b.fill(results, p.cfg.Backoff(1))
	for _, h := range p.outcomeHooks {
		h.OnOutcome(ctx, m, results[0])
	}
	return nil
}

func allAcked(rs []Result) bool {
	for _, r := range rs {
		if !r.Outcome.Ack() {
			return false
		}
	}
	return true
}

func (p *Processor[TTx]) processBatch(ctx context.Context, msgs []*Message, results []Result, cp *Checkpoint, alone bool) (err error) {
	var ends []func(error)
	for _, h := range p.startHooks {
		var end func(error)
		ctx, end = h.OnBatchStart(ctx, len(msgs))
		ends = append(ends, end)
	}
	defer func() {
		for _, end := range ends {
			end(err)
		}
	}()

	b := p.prepare(msgs, p.encodesHeaders(ctx))
	b.cp, b.alone = cp, alone
	info := BatchInfo{Size: len(msgs)}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err = p.runBatch(ctx, b, &info)
		if err == nil || !p.driver.IsTransient(err) || attempt >= p.cfg.TransientRetries || ctx.Err() != nil {
			break
		}
		info.Transient++
		b.reset()
		p.cfg.Logger.DebugContext(ctx, "txinbox: retrying batch after a transient database error", "err", err)
	}
	info.Duration, info.Err = time.Since(start), err
	info.HandlerDuration, info.CommitDuration = b.handlerTime, b.commitTime
	if err == nil {
		p.afterCommit(ctx, b)
		b.fill(results, p.cfg.Backoff(1))
	}
	for _, h := range p.batchHooks {
		h.OnBatch(ctx, info)
	}
	if err != nil {
		return fmt.Errorf("txinbox: batch of %d messages not committed: %w", len(msgs), err)
	}
	for i, m := range msgs {
		for _, h := range p.outcomeHooks {
			h.OnOutcome(ctx, m, results[i])
		}
	}
	return nil
}

// ReportAck tells the configured AckHooks that a source acknowledged
// messages to its broker (see AckInfo). The sources of this module call it
// after each ack; call it from a source of your own the same way. An empty
// info.Scope is the processor's Config.Scope. It does nothing when no hook
// implements AckHook.
func (p *Processor[TTx]) ReportAck(ctx context.Context, info AckInfo) {
	if len(p.ackHooks) == 0 {
		return
	}
	if info.Scope == "" {
		info.Scope = p.cfg.Scope
	}
	for _, h := range p.ackHooks {
		h.OnAck(ctx, info)
	}
}

// CommitWait bounds how long a batch's commit that was sent is awaited
// once the context of Process has ended: then it is abandoned, with
// ErrCommitUnknown. A caller that must return only once the outcome of
// every batch is known (a server's stop that cut its batches) waits for
// Process at least this long after the cut.
const CommitWait = 10 * time.Second

// commitContext is the context a batch's commit (or its one autocommitted
// statement) is sent with. Were it the caller's, a cancel while the
// commit is on its way would drop the connection (pgx sets a deadline on
// it: the server is not told, and its COMMIT runs to its end): the server
// may still commit after Process returned an error, and a caller that
// stops a consumer and then counts, truncates or migrates could see the
// batch land afterwards. So a commit that is sent is awaited: without
// limit while the caller's context lives (a slow commit is not cut short
// of its answer), for up to CommitWait once it ended; then the connection
// is dropped and the error says that the outcome is unknown
// (ErrCommitUnknown). A commit whose context ended before it was sent is
// not sent (the batch rolls back).
func commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return commitContextWithin(ctx, CommitWait)
}

// commitContextWithin is commitContext with the wait after the caller's
// context ended as a parameter (tests).
func commitContextWithin(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	if ctx.Err() != nil {
		return ctx, func() {}
	}
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			cancel(ErrCommitUnknown)
		case <-cctx.Done(): // the commit answered
		}
	})
	return cctx, func() {
		stop()
		cancel(nil)
	}
}

// commitErr is the error of a commit sent with cctx (commitContext): the
// commit's own, joined with ErrCommitUnknown when it was abandoned.
func commitErr(cctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(cctx), ErrCommitUnknown) && !errors.Is(err, ErrCommitUnknown) {
		return errors.Join(err, ErrCommitUnknown)
	}
	return err
}

// commitTx commits tx with commitContext.
func commitTx[TTx any](ctx context.Context, tx store.Tx[TTx]) error {
	cctx, cancel := commitContext(ctx)
	defer cancel()
	return commitErr(cctx, tx.Commit(cctx))
}

// afterCommit records the failed attempts in their own transaction, so
// that the counts survive the rollback of the handlers' work, and logs
// them: every path of a failed attempt (Process, Submit, ProcessOffsets,
// a message failing alone) ends here, once per attempt.
func (p *Processor[TTx]) afterCommit(ctx context.Context, b *batch) {
	var rows []store.FailureRow
	var failed []*item
	for _, it := range b.items {
		if it.res.Outcome == Retry && it.failed {
			rows = append(rows, p.failureRow(it))
			failed = append(failed, it)
		}
	}
	if len(rows) > 0 {
		frs, err := p.driver.RecordFailures(ctx, rows, p.cfg.MaxAttempts)
		if err != nil {
			// The messages stay Retry: not acked, redelivered after the
			// first backoff step. This failed attempt goes uncounted.
			p.cfg.Logger.ErrorContext(ctx, "txinbox: recording failed attempts", "err", err, "messages", len(rows))
			for _, it := range failed {
				it.res.RetryAfter = p.cfg.Backoff(1)
				p.logFailedAttempt(ctx, it, 0)
			}
		}
		for i, fr := range frs {
			it := failed[i]
			it.res.Attempts = fr.Attempts
			if fr.Committed {
				// Another delivery of the same id committed while this one
				// failed: the effect exists once; this copy is a duplicate,
				// or drift (recorded by RecordFailures) with another payload.
				it.res = Result{Outcome: Duplicate}
				if fr.Drift {
					it.res.Outcome = Drift
				}
			} else if fr.DeadLettered {
				it.res.Outcome, it.res.RetryAfter = DeadLettered, 0
				p.cfg.Logger.WarnContext(ctx, "txinbox: message dead-lettered", "scope", it.row.Scope,
					"message_id", it.row.MessageID, "attempts", fr.Attempts, "err", it.res.Err)
			} else {
				it.res.RetryAfter = p.cfg.Backoff(fr.Attempts)
				p.logFailedAttempt(ctx, it, fr.Attempts)
			}
		}
	}
}
