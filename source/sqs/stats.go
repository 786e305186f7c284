package sqs

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
	// Deleted counts messages deleted from the queue; DeleteErrors those
	// whose delete failed (they are received again, as duplicates).
	Deleted      int64
	DeleteErrors int64
	// BatchErrors counts batch transactions that did not commit.
	BatchErrors int64
	// ReceiveErrors counts failed ReceiveMessage calls.
	ReceiveErrors int64
	// Extensions counts visibility extensions of batches in flight.
	Extensions int64
	// DeadLettersSent counts copies sent to DeadLetterQueueURL.
	DeadLettersSent int64
}

type stats struct {
	outcomes        [txinbox.DeadLettered + 1]atomic.Int64
	deleted         atomic.Int64
	deleteErrors    atomic.Int64
	batchErrors     atomic.Int64
	receiveErrors   atomic.Int64
	extensions      atomic.Int64
	deadLettersSent atomic.Int64
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
		Processed:       s.outcomes[txinbox.Processed].Load(),
		Duplicates:      s.outcomes[txinbox.Duplicate].Load(),
		Drift:           s.outcomes[txinbox.Drift].Load(),
		DeadLettered:    s.outcomes[txinbox.DeadLettered].Load(),
		Retries:         s.outcomes[txinbox.Retry].Load(),
		Deleted:         s.deleted.Load(),
		DeleteErrors:    s.deleteErrors.Load(),
		BatchErrors:     s.batchErrors.Load(),
		ReceiveErrors:   s.receiveErrors.Load(),
		Extensions:      s.extensions.Load(),
		DeadLettersSent: s.deadLettersSent.Load(),
	}
}
