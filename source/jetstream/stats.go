package jetstream

import (
	"sync/atomic"

	"github.com/txinbox/txinbox"
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
	outcomes             [txinbox.DeadLettered + 1]atomic.Int64
	acked                atomic.Int64
	ackErrors            atomic.Int64
	batchErrors          atomic.Int64
	inProgress           atomic.Int64
	resubscribes         atomic.Int64
	deadLettersPublished atomic.Int64
}

func (s *stats) count(res []txinbox.Result) {
	for _, r := range res {
		if r.Outcome >= txinbox.Processed && r.Outcome <= txinbox.DeadLettered {
			s.outcomes[r.Outcome].Add(1)
		}
	}
}

// Stats returns a snapshot of the consumer's counters.
func (c *Consumer[TTx]) Stats() Stats {
	s := &c.stats
	return Stats{
		Processed:            s.outcomes[txinbox.Processed].Load(),
		Duplicates:           s.outcomes[txinbox.Duplicate].Load(),
		Drift:                s.outcomes[txinbox.Drift].Load(),
		DeadLettered:         s.outcomes[txinbox.DeadLettered].Load(),
		Retries:              s.outcomes[txinbox.Retry].Load(),
		Acked:                s.acked.Load(),
		AckErrors:            s.ackErrors.Load(),
		BatchErrors:          s.batchErrors.Load(),
		InProgress:           s.inProgress.Load(),
		Resubscribes:         s.resubscribes.Load(),
		DeadLettersPublished: s.deadLettersPublished.Load(),
	}
}
