package sqs

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
	batches         runner.Batches
	deleted         atomic.Int64
	deleteErrors    atomic.Int64
	receiveErrors   atomic.Int64
	extensions      atomic.Int64
	deadLettersSent atomic.Int64
}

// Stats returns a snapshot of the consumer's counters.
func (c *Consumer[TTx]) Stats() Stats {
	s := &c.stats
	return Stats{
		Processed:       s.batches.Outcomes.Load(txinbox.Processed),
		Duplicates:      s.batches.Outcomes.Load(txinbox.Duplicate),
		Drift:           s.batches.Outcomes.Load(txinbox.Drift),
		DeadLettered:    s.batches.Outcomes.Load(txinbox.DeadLettered),
		Retries:         s.batches.Outcomes.Load(txinbox.Retry),
		Deleted:         s.deleted.Load(),
		DeleteErrors:    s.deleteErrors.Load(),
		BatchErrors:     s.batches.Errors.Load(),
		ReceiveErrors:   s.receiveErrors.Load(),
		Extensions:      s.extensions.Load(),
		DeadLettersSent: s.deadLettersSent.Load(),
	}
}
