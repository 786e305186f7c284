package txinbox

import (
	"context"
	"time"
)

// A Hook is any value implementing one or more of the hook interfaces below
// (OutcomeHook, BatchHook, BatchStartHook, AckHook). Hooks must be fast and
// safe for concurrent use; they run on the processing goroutine. Prometheus and OpenTelemetry hooks
// live in their own packages, so the core imports neither.
type Hook any

// OutcomeHook is called once per message after its outcome is final (after
// the commit, or after a failure was recorded).
type OutcomeHook interface {
	OnOutcome(ctx context.Context, msg *Message, res Result)
}

// BatchHook is called once per batch transaction attempt.
type BatchHook interface {
	OnBatch(ctx context.Context, info BatchInfo)
}

// BatchStartHook is called before a batch starts; the context it returns is
// used for the batch (to carry a tracing span) and end is called with the
// batch's error. Implement it for tracing.
type BatchStartHook interface {
	OnBatchStart(ctx context.Context, size int) (_ context.Context, end func(err error))
}

// BatchInfo describes one processed batch.
type BatchInfo struct {
	Size      int           // messages given
	New       int           // messages whose claim inserted a row
	Duration  time.Duration // from begin to commit (or failure)
	Redone    bool          // a handler failed and the batch was redone with savepoints
	Err       error         // non-nil when the batch did not commit
	Transient int           // transaction retries after transient database errors
	// HandlerDuration is the time spent in the handler(s) of the batch:
	// the optimistic pass, the savepoint redo and transient retries
	// included; zero when no handler ran (every message a duplicate). It
	// is part of Duration.
	HandlerDuration time.Duration
	// CommitDuration is the COMMIT round trip of the batch's last
	// transaction attempt; zero when that attempt did not reach its
	// commit.
	CommitDuration time.Duration
}

// AckHook is called by a source after it acknowledged to the broker what a
// batch committed (an AMQP ack, an SQS delete, a JetStream ack, a Kafka
// offset commit). Sources call it through Processor.ReportAck.
type AckHook interface {
	OnAck(ctx context.Context, info AckInfo)
}

// AckInfo describes one acknowledgement to a broker.
type AckInfo struct {
	// Scope is the inbox scope of the acknowledged messages.
	Scope string
	// Source is the label the messages carry in Message.Source (topic,
	// queue, stream), or the broker's name when one ack covers several.
	Source string
	// Messages is how many messages the ack covered (or was to cover, when
	// it failed).
	Messages int
	// Duration is the time the ack call took.
	Duration time.Duration
	// Err is non-nil when the ack failed: the broker will redeliver the
	// messages and the inbox skips them as duplicates.
	Err error
}
