package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// recordTimeout bounds the transaction that records a batch's outcomes,
// which runs even after the relay's context is done.
const recordTimeout = 30 * time.Second

// Relay sends the outbox rows of one Store to one Target. Any number of
// relays, in one process or several, may share a table: each row is sent
// by one relay at a time.
//
// Delivery is at least once: a row is marked sent only after the target
// confirmed it, so a crash (or a lost database) between the confirm and
// the mark sends the row again, with the same Message.StableID, which the
// receiver deduplicates on.
type Relay struct {
	store Store
	cfg   Config
	owner string
	seq   atomic.Uint64

	claims, sent, retried, failed atomic.Uint64
	sendNanos                     atomic.Int64

	health relayHealth
}

// relayHealth is whether the relay's last claim and recording worked.
type relayHealth struct {
	mu      sync.Mutex
	since   time.Time // first failure of the current run of failures; zero when the last batch worked
	lastErr error
	errors  uint64
}

func (h *relayHealth) record(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.since, h.lastErr = time.Time{}, nil
		return
	}
	h.errors++
	if h.since.IsZero() {
		h.since = time.Now()
	}
	h.lastErr = err
}

// Health is whether a relay can claim rows and record what it sent.
type Health struct {
	// FailingSince is when the claims or recordings started failing
	// (database errors, one after another); zero when the last one
	// worked.
	FailingSince time.Time
	// LastError is the last such failure; nil when the last one worked.
	LastError error
	// BatchErrors counts the failed claims and recordings since New.
	BatchErrors uint64
}

// Err returns nil when the relay works, else an error saying since when
// it fails and why.
func (h Health) Err() error {
	if h.LastError == nil {
		return nil
	}
	return fmt.Errorf("outbox relay: claiming or recording fails since %s: %w",
		h.FailingSince.UTC().Format(time.RFC3339), h.LastError)
}

// Health reports whether the relay's last claim and recording worked:
// for a readiness check and a metric. Failed sends are not failures of
// the relay (they are retried by row); rows that cannot be claimed or
// whose outcomes cannot be recorded are.
func (r *Relay) Health() Health {
	r.health.mu.Lock()
	defer r.health.mu.Unlock()
	return Health{FailingSince: r.health.since, LastError: r.health.lastErr, BatchErrors: r.health.errors}
}

// Counters are a relay's running totals since New, for metrics.
type Counters struct {
	Claims   uint64        // claims that returned at least one row
	Sent     uint64        // sends the target confirmed
	Retried  uint64        // failed sends to retry
	Failed   uint64        // rows failed for good
	SendTime time.Duration // total time spent in the target's Send
}

// New returns a relay of the rows of s (outboxpg.New(driver) or
// outboxlite.New(driver)). Zero fields of cfg take their defaults; an invalid
// field is an error naming it.
func New(s Store, cfg Config) (*Relay, error) {
	if s == nil {
		return nil, errors.New("outbox: New: store is nil")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Relay{store: s, cfg: cfg, owner: newOwner()}, nil
}

// Counters returns the relay's running totals.
func (r *Relay) Counters() Counters {
	return Counters{Claims: r.claims.Load(), Sent: r.sent.Load(), Retried: r.retried.Load(), Failed: r.failed.Load(),
		SendTime: time.Duration(r.sendNanos.Load())}
}

// Run sends rows until ctx is done, then lets the sends in flight finish,
// records their outcomes and returns nil. Database errors are logged and
// retried; Run returns an error only when it cannot start.
func (r *Relay) Run(ctx context.Context) error {
	wait := r.cfg.PollInterval
	for {
		claimed, _, err := r.batch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil:
			r.cfg.Logger.Error("outbox relay: claiming or recording failed; retrying", "error", err, "retry_in", wait)
			wait = min(max(wait*2, 100*time.Millisecond), 10*time.Second)
		case claimed > 0:
			wait = r.cfg.PollInterval
			continue
		default:
			wait = r.cfg.PollInterval
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// RunOnce sends what is due now, batch after batch, until a claim finds
// nothing due, and returns how many rows the target confirmed. Rows that
// failed and wait for a retry are not waited for.
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		claimed, sent, err := r.batch(ctx)
		total += sent
		if err != nil || claimed == 0 {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// batch claims rows, sends them and records the outcomes. It returns how
// many rows it claimed and how many the target confirmed.
func (r *Relay) batch(ctx context.Context) (claimed, sent int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	claimed, sent, err = r.sendBatch(ctx)
	if ctx.Err() == nil || err == nil {
		r.health.record(err)
	}
	return claimed, sent, err
}

// sendBatch is batch without the health record.
func (r *Relay) sendBatch(ctx context.Context) (claimed, sent int, err error) {
	start := time.Now()
	c, err := r.store.Claim(ctx, ClaimSpec{N: r.cfg.BatchSize, Ordered: r.cfg.Ordered, Lease: r.cfg.LeaseDuration,
		Owner: r.owner + "-" + strconv.FormatUint(r.seq.Add(1), 10)})
	if err != nil {
		return 0, 0, fmt.Errorf("outbox: claim: %w", err)
	}
	msgs := c.Messages()
	if len(msgs) > 0 {
		r.claims.Add(1)
	}
	// No send may outlive the claim: on SQLite another relay could take
	// the rows over once the lease ends.
	lastStart := start.Add(r.cfg.LeaseDuration - r.cfg.SendTimeout)
	outs := make([]Outcome, len(msgs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(r.cfg.Concurrency, len(msgs)) {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil || time.Now().After(lastStart) {
					continue // untouched: back to the queue
				}
				if msgs[i].Unreadable != nil {
					outs[i] = r.failUnreadable(msgs[i])
					continue
				}
				outs[i] = r.send(ctx, msgs[i])
			}
		})
	}
	for i := range msgs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, o := range outs {
		if o.Result == Sent {
			sent++
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := c.Finish(rctx, outs); err != nil {
		if sent > 0 {
			r.cfg.Logger.Warn("outbox relay: sends were confirmed but not recorded; they will be sent again",
				"rows", sent, "error", err)
		}
		return len(msgs), sent, fmt.Errorf("outbox: recording %d outcomes: %w", len(msgs), err)
	}
	return len(msgs), sent, nil
}

// send sends one message and decides its outcome. The send is not cut
// short by the relay's context (the caller waits for sends in flight),
// only by SendTimeout.
func (r *Relay) send(ctx context.Context, m *Message) Outcome {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.SendTimeout)
	defer cancel()
	start := time.Now()
	receipt, err := safeSend(sctx, r.cfg.Target, m)
	latency := time.Since(start)
	r.sendNanos.Add(int64(latency))
	ev := SendEvent{Message: m, Err: err, Latency: latency}
	var o Outcome
	log := r.cfg.Logger.With("id", m.ID, "stable_id", m.StableID(), "attempt", m.Attempt)
	switch {
	case err == nil:
		o = Outcome{Result: Sent, Receipt: receipt}
		ev.Result = Sent
		r.sent.Add(1)
	case IsPermanent(err) || m.Attempt >= r.cfg.MaxAttempts:
		o = Outcome{Result: Failed, Err: errorText(err)}
		ev.Result = Failed
		r.failed.Add(1)
		log.Error("outbox relay: row failed for good (replay it once fixed)", "error", err, "permanent", IsPermanent(err))
	default:
		delay := max(r.cfg.Backoff(m.Attempt), retryAfter(err))
		o = Outcome{Result: Retried, Err: errorText(err), Delay: delay}
		ev.Result = Retried
		r.retried.Add(1)
		log.Warn("outbox relay: send failed; will retry", "error", err, "retry_in", delay)
	}
	if r.cfg.OnSend != nil {
		r.cfg.OnSend(ev)
	}
	return o
}

// failUnreadable fails a row the store could not read, without sending
// it: nothing a retry changes, and an unreadable row must not hold up the
// rows behind it. `relay list-failed` shows it with the reason.
func (r *Relay) failUnreadable(m *Message) Outcome {
	err := fmt.Errorf("row %d cannot be read: %w", m.ID, m.Unreadable)
	r.failed.Add(1)
	r.cfg.Logger.Error("outbox relay: row failed for good without a send (fix the row, then replay it)", "id", m.ID, "error", err)
	if r.cfg.OnSend != nil {
		r.cfg.OnSend(SendEvent{Message: m, Result: Failed, Err: err})
	}
	return Outcome{Result: Failed, Err: errorText(err)}
}

// safeSend turns a target's panic into an error: one bad row must not take
// the relay down.
func safeSend(ctx context.Context, t Target, m *Message) (rc Receipt, err error) {
	defer func() {
		if p := recover(); p != nil {
			rc, err = nil, fmt.Errorf("outbox: target panicked: %v", p)
		}
	}()
	return t.Send(ctx, m)
}
