package jetstream

import (
	"sync/atomic"

	"github.com/txinbox/txinbox/source"
)

// Stats counts what a Consumer did since it was created.
type Stats struct {
	// Outcomes counts the outcomes and the batch errors.
	source.Outcomes
	// Acked counts acks sent; AckErrors acks and naks that could not be
	// sent (the message is redelivered after AckWait).
	Acked     int64
	AckErrors int64
	// InProgress counts the InProgress renewals sent.
	InProgress int64
	// Resubscribes counts subscriptions opened again after they broke.
	Resubscribes int64
	// DeadLettersPublished counts copies sent to DeadLetterSubject.
	DeadLettersPublished int64
}

type stats struct {
	acked                atomic.Int64
	ackErrors            atomic.Int64
	inProgress           atomic.Int64
	resubscribes         atomic.Int64
	deadLettersPublished atomic.Int64
}

// Stats returns a snapshot of the consumer's counters.
func (c *Consumer) Stats() Stats {
	s := &c.stats
	return Stats{
		Outcomes:             c.base.Outcomes(),
		Acked:                s.acked.Load(),
		AckErrors:            s.ackErrors.Load(),
		InProgress:           s.inProgress.Load(),
		Resubscribes:         s.resubscribes.Load(),
		DeadLettersPublished: s.deadLettersPublished.Load(),
	}
}
