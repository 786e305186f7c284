package sqs

import (
	"sync/atomic"

	"github.com/txinbox/txinbox/source"
)

// Stats counts what a Consumer did since it was created.
type Stats struct {
	// Outcomes counts the outcomes and the batch errors.
	source.Outcomes
	// Deleted counts messages deleted from the queue; DeleteErrors those
	// whose delete failed (they are received again, as duplicates).
	Deleted      int64
	DeleteErrors int64
	// ReceiveErrors counts failed ReceiveMessage calls.
	ReceiveErrors int64
	// Extensions counts visibility extensions of batches in flight.
	Extensions int64
	// DeadLettersSent counts copies sent to DeadLetterQueueURL.
	DeadLettersSent int64
}

type stats struct {
	deleted         atomic.Int64
	deleteErrors    atomic.Int64
	receiveErrors   atomic.Int64
	extensions      atomic.Int64
	deadLettersSent atomic.Int64
}

// Stats returns a snapshot of the consumer's counters.
func (c *Consumer) Stats() Stats {
	s := &c.stats
	return Stats{
		Outcomes:        c.base.Outcomes(),
		Deleted:         s.deleted.Load(),
		DeleteErrors:    s.deleteErrors.Load(),
		ReceiveErrors:   s.receiveErrors.Load(),
		Extensions:      s.extensions.Load(),
		DeadLettersSent: s.deadLettersSent.Load(),
	}
}
