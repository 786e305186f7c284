package txinbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/store"
)

// A handler whose connection the server or the network closed (a
// *dbFault) is taken for a database outage: the batch fails as a whole,
// and the sources do not count that delivery against its messages. But a
// message can close its own connection while the database stays up (its
// handler runs pg_terminate_backend, or a statement that crashes its
// backend); taken for an outage every time, it would fail its batch
// forever and never be dead-lettered. So when the database answers a ping
// after such a loss, the message is suspected: left out of the batch
// (Retry, no attempt counted), the others redone and committed, then run
// again alone in the same Process call. Losing its connection again there
// while the database answers, it is blamed: one attempt counted, and it is
// dead-lettered after MaxAttempts deliveries. A loss that has another
// cause (an operator or a failover ended every session) rarely strikes the
// same message twice in a row, and never counts more than one attempt.

// recoveryWindow bounds how long the processor waits for the database to
// answer after a handler's connection was closed: a backend crash restarts
// every session, and the database answers again once its recovery ends.
const recoveryWindow = 5 * time.Second

// suspectError is the Result.Err of a message left out of its batch
// because its handler's connection was closed while the database answered.
type suspectError struct{ err error }

func (e *suspectError) Error() string {
	return "txinbox: not run: its handler's connection was closed while the database answered; run again alone: " + e.err.Error()
}

func (e *suspectError) Unwrap() error { return e.err }

// answers reports whether herr is a handler's connection closed by the
// server or the network while the database keeps answering (within the
// recovery window): no outage.
func (p *Processor[TTx]) answers(ctx context.Context, herr error) bool {
	var df *dbFault
	pinger, ok := p.driver.(store.Pinger)
	if !ok || !errors.As(herr, &df) || ctx.Err() != nil {
		return false
	}
	deadline := time.Now().Add(recoveryWindow)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := pinger.Ping(pctx)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// suspect leaves it out of the batch, whose handler lost its connection
// with herr while the database answered (answers): in a batch run alone
// for a suspect, it is blamed (an attempt counted); else it is left for
// Retry, to run alone once the batch committed (runSuspects).
func (p *Processor[TTx]) suspect(b *batch, it *item, herr error) {
	it.excluded = true
	if b.alone {
		p.markFailed(it, fmt.Errorf("txinbox: its handler's connection was closed twice in a row while the database answered "+
			"(pg_terminate_backend, or a statement that crashes its backend?): %w", herr))
		return
	}
	it.res = Result{Outcome: Retry, Err: &suspectError{herr}, RetryAfter: p.cfg.Backoff(1)}
}

// runSuspects runs alone, each in a transaction of its own, the messages
// of a committed batch that were left out as suspects (suspect). A later
// copy of a suspect's id stays a Retry: redelivered, it meets what became
// of the first.
func (p *Processor[TTx]) runSuspects(ctx context.Context, msgs []*Message, results []Result) error {
	var ran map[store.Key]bool
	for i := range results {
		var se *suspectError
		if results[i].Outcome != Retry || !errors.As(results[i].Err, &se) {
			continue
		}
		key := store.Key{Scope: msgs[i].Scope, MessageID: msgs[i].ID}
		if ran[key] {
			continue
		}
		if ran == nil {
			ran = map[store.Key]bool{}
		}
		ran[key] = true
		results[i] = Result{}
		if err := p.processBatch(ctx, msgs[i:i+1], results[i:i+1], nil, true); err != nil {
			return err
		}
	}
	return nil
}
