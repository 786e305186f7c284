package runner

import (
	"context"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/internal/deliveries"
)

// Base is what the consumers of the sources with a delivery count (amqp,
// sqs, jetstream) keep besides their Config: the processor and its batch
// size, the delivery-count guard, the counts of the batches and the
// once-only Run.
type Base struct {
	pkg  string
	proc source.Processor
	// Batch is the processor's MaxBatchSize: the deliveries gathered into
	// one Process call.
	Batch   int
	guard   deliveries.Guard
	batches Batches
	running Once
}

// NewBase returns the Base of a consumer of package pkg over proc, whose
// guard dead-letters a message counted more than maxDeliveries times; verb
// names the count in the reason ("delivered", "received").
func NewBase(pkg string, proc source.Processor, maxDeliveries int, verb string) *Base {
	return &Base{pkg: pkg, proc: proc, Batch: proc.Settings().MaxBatchSize,
		guard: deliveries.Guard{Max: maxDeliveries, Verb: verb, Excused: deliveries.NewExcuses()}}
}

// Processor returns the processor.
func (b *Base) Processor() source.Processor { return b.proc }

// Start lets Run start once: see Once.
func (b *Base) Start() error { return b.running.Start(b.pkg) }

// Guard sets m.Refusal when count, the broker's delivery count of m, less
// the deliveries excused, exceeds the maximum (deliveries.Guard.Check).
func (b *Base) Guard(m *txinbox.Message, count int) { b.guard.Check(m, count) }

// Process hands msgs to the processor and counts the outcome (see
// Batches.Process); backoff gives the redelivery delay of a failed batch.
func (b *Base) Process(ctx context.Context, msgs []*txinbox.Message, backoff txinbox.BackoffFunc) Outcome {
	return b.batches.Process(ctx, b.proc, msgs, b.guard.Excused, backoff)
}

// ReportAck reports an ack of n messages of source to the processor's
// AckHooks (see the function ReportAck).
func (b *Base) ReportAck(ctx context.Context, source string, n int, start time.Time, err error) {
	ReportAck(ctx, b.proc, source, n, start, err)
}

// Outcomes returns the outcome and batch error counts.
func (b *Base) Outcomes() source.Outcomes { return b.batches.Snapshot() }
