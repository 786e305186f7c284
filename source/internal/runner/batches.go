package runner

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/internal/deliveries"
	"github.com/txinbox/txinbox/source/internal/outcomes"
)

// Batches counts what became of a consumer's batches: the outcomes of
// their messages, the transactions that did not commit, and how many of
// those failed in a row. One goroutine calls Done; the counters may be
// read from any.
type Batches struct {
	// Outcomes counts the results by outcome.
	Outcomes outcomes.Counter
	// Errors counts the batch transactions that did not commit.
	Errors   atomic.Int64
	failures int
	since    time.Time // when the current run of failed batches began
	// now is the clock; nil is time.Now.
	now func() time.Time
}

// Done counts the results of a batch of n messages whose Process returned
// res and err. It returns the results, n zero ones when res is nil (a
// usage error: nothing committed), and, when err is not nil, the count of
// consecutive batches that failed, this one included (0 when err is nil).
func (b *Batches) Done(res []txinbox.Result, n int, err error) ([]txinbox.Result, int) {
	if res == nil {
		res = make([]txinbox.Result, n)
	}
	b.Outcomes.Count(res)
	if err == nil {
		b.failures = 0
		return res, 0
	}
	if b.failures == 0 {
		b.since = b.clock()
	}
	b.failures++
	b.Errors.Add(1)
	return res, b.failures
}

// Snapshot returns the outcome and error counts.
func (b *Batches) Snapshot() source.Outcomes { return b.Outcomes.Snapshot(b.Errors.Load()) }

func (b *Batches) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

// FailDelay is the redelivery delay of the messages of a batch that just
// failed (Done returned failures > 0): see OutageDelay.
func (b *Batches) FailDelay(backoff txinbox.BackoffFunc) time.Duration {
	return OutageDelay(backoff, b.failures, b.clock().Sub(b.since))
}

// OutageDelay is how long to wait before trying again messages whose
// batch failed for a reason tied to none of them (the database is down),
// after failures such batches in a row that began outage ago:
// backoff(failures), but never longer than the outage has lasted so far
// (and at least backoff(1)). Many batches fail in a second while the
// database is away, so the count alone would reach the ceiling of the
// backoff within seconds, and the messages would wait minutes after the
// database came back; the time keeps the wait in proportion to the
// outage.
func OutageDelay(backoff txinbox.BackoffFunc, failures int, outage time.Duration) time.Duration {
	return min(backoff(failures), max(outage, backoff(1)))
}

// Outcome is what became of one batch handed to the processor.
type Outcome struct {
	// Results has one result per message; their outcomes are zero when
	// the batch did not commit.
	Results []txinbox.Result
	// Err is Process's error.
	Err error
	// Failures counts the batches that failed in a row, this one
	// included; 0 when Err is nil.
	Failures int
	// FailDelay is the redelivery delay of the messages of a failed
	// batch (see FailDelay); 0 when Err is nil.
	FailDelay time.Duration
}

// Process hands msgs to proc, counts the outcome, records in excused the
// deliveries of a batch that failed as a whole (or forgets those of the
// messages acked) and gives the redelivery delay of a failed batch by
// backoff.
func (b *Batches) Process(ctx context.Context, proc source.Processor, msgs []*txinbox.Message, excused *deliveries.Excuses,
	backoff txinbox.BackoffFunc) Outcome {
	res, err := proc.Process(ctx, msgs)
	o := Outcome{Err: err}
	o.Results, o.Failures = b.Done(res, len(msgs), err)
	excused.Record(msgs, o.Results)
	if err != nil {
		o.FailDelay = b.FailDelay(backoff)
	}
	return o
}
