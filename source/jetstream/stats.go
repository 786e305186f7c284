package jetstream

import (
	"sync/atomic"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// Stats counts what a Consumer did since it was created.
type Stats struct {
	// Processed, Duplicates, Drift, DeadLettered and Retries count the
	// messages by outcome (a message retried twice counts twice).
	Processed    int64
	Duplicates   int64
	Drift        int64
	DeadLettered int64
	Retries      int64
	// Acked counts acks sent; AckErrors acks and naks that could not be
	// sent (the message is redelivered after AckWait).
	Acked     int64
	AckErrors int64
	// BatchErrors counts batch transactions that did not commit.
	BatchErrors int64
	// InProgress counts the InProgress renewals sent.
	InProgress int64
	// Resubscribes counts subscriptions opened again after they broke.
	Resubscribes int64
	// DeadLettersPublished counts copies sent to DeadLetterSubject.
	DeadLettersPublished int64
}

type stats struct {
	batches              runner.Batches
	acked                atomic.Int64
	ackErrors            atomic.Int64
	inProgress           atomic.Int64
	resubscribes         atomic.Int64
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
		AckErrors:            s.ackErrors.Load(),
		BatchErrors:          s.batches.Errors.Load(),
		InProgress:           s.inProgress.Load(),
		Resubscribes:         s.resubscribes.Load(),
		DeadLettersPublished: s.deadLettersPublished.Load(),
	}
}
