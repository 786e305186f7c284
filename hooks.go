package txinbox

import (
	"context"
	"time"
)

// A Hook is any value implementing one or more of the hook interfaces below
// (OutcomeHook, BatchHook). Hooks must be fast and safe for concurrent use;
// they run on the processing goroutine. Prometheus and OpenTelemetry hooks
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
}
