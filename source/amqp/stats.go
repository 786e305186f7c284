package amqp

import (
	"sync/atomic"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// Stats counts what a Consumer did since it was created.
type Stats struct {
	// Processed, Duplicates, Drift, DeadLettered and Retries count the
	// deliveries by outcome (a message retried twice counts twice).
	Processed    int64
	Duplicates   int64
	Drift        int64
	DeadLettered int64
	Retries      int64
	// Acked counts deliveries acked; MultipleAcks the batches acked with
	// one multiple-ack; AckErrors acks lost with their channel (the
	// delivery comes back as a duplicate).
	Acked        int64
	MultipleAcks int64
	AckErrors    int64
	// Requeued counts deliveries held, then nacked with requeue.
	Requeued int64
	// BatchErrors counts batch transactions that did not commit.
	BatchErrors int64
	// Reconnects counts connections dialed again after a loss.
	Reconnects int64
	// DeadLettersPublished counts copies sent to DeadLetterExchange.
	DeadLettersPublished int64
}

type stats struct {
	batches              runner.Batches
	acked                atomic.Int64
	multipleAcks         atomic.Int64
	ackErrors            atomic.Int64
	requeued             atomic.Int64
	reconnects           atomic.Int64
	deadLettersPublished atomic.Int64
}

// Stats returns a snapshot of the consumer's counters.
func (c *Consumer[TTx]) Stats() Stats {
	s := &c.stats
	return Stats{
		Processed:            s.batches.Outcomes.Load(txinbox.Processed),
		Duplicates:           s.batches.Outcomes.Load(txinbox.Duplicate),
		Drift:                s.batches.Outcomes.Load(txinbox.Drift),
		DeadLettered:         s.batches.Outcomes.Load(txinbox.DeadLettered),
		Retries:              s.batches.Outcomes.Load(txinbox.Retry),
		Acked:                s.acked.Load(),
		MultipleAcks:         s.multipleAcks.Load(),
		AckErrors:            s.ackErrors.Load(),
		Requeued:             s.requeued.Load(),
		BatchErrors:          s.batches.Errors.Load(),
		Reconnects:           s.reconnects.Load(),
		DeadLettersPublished: s.deadLettersPublished.Load(),
	}
}
