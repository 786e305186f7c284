package txinbox

import (
	"fmt"
	"time"
)

// Outcome is what processing one message came to.
type Outcome int

const (
	// Processed: the message was new, its side effect ran and committed
	// together with its inbox row.
	Processed Outcome = iota + 1
	// Duplicate: the (scope, id) was already processed with the same
	// payload; the side effect did not run.
	Duplicate
	// Drift: the (scope, id) was already processed with another payload;
	// the side effect did not run and the attempt was recorded.
	Drift
	// Retry: the handler failed; nothing it did was committed and the id
	// is not recorded as processed. Do not ack: let the broker redeliver
	// (after Result.RetryAfter).
	Retry
	// DeadLettered: the message failed Config.MaxAttempts times, failed
	// permanently, or cannot be processed at all (no id). It is stored in
	// the dead-letter table with its last error.
	DeadLettered
	// InFlight: another transaction holds the same (scope, id) uncommitted
	// right now (a second delivery while the first is still being
	// processed). Only with Config.FailFastInFlight and a store whose
	// transactions implement store.InFlightLocker: the message is not
	// claimed, its handler does not run, no attempt is counted, and the
	// rest of its batch is processed as usual. Do not ack: redeliver later
	// (after Result.RetryAfter); by then the first delivery has committed
	// (a Duplicate) or rolled back (run again).
	InFlight
)

var outcomeNames = [...]string{"", "processed", "duplicate", "drift", "retry", "dead_lettered", "in_flight"}

// String returns the outcome's lower-case name, as used in metrics.
func (o Outcome) String() string {
	if o < Processed || o > InFlight {
		return fmt.Sprintf("outcome(%d)", int(o))
	}
	return outcomeNames[o]
}

// Ack reports whether the source may acknowledge the message: true for
// every outcome but Retry and InFlight. Every acked message is committed somewhere: in
// the inbox, the drift table or the dead-letter table.
func (o Outcome) Ack() bool { return o != Retry && o != InFlight && o != 0 }

// Result is the outcome of one message, aligned with the messages given to
// Process.
type Result struct {
	Outcome Outcome
	// Attempts counts the failed attempts recorded for the message (Retry
	// and DeadLettered).
	Attempts int
	// RetryAfter is the backoff the source should wait before redelivering
	// a Retry.
	RetryAfter time.Duration
	// Err is the handler's error for Retry and DeadLettered, or the reason a
	// message could not be processed.
	Err error
	// Reply is, for a Duplicate under Config.Replies, the Message.Reply
	// that the handler of the delivery that committed left: stored in its
	// inbox row, in its transaction. Nil when that handler left none.
	Reply []byte
}
