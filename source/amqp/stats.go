package amqp

import (
	"sync/atomic"

	"github.com/txinbox/txinbox"
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
	outcomes             [txinbox.DeadLettered + 1]atomic.Int64
	acked                atomic.Int64
	multipleAcks         atomic.Int64
	ackErrors            atomic.Int64
	requeued             atomic.Int64
	batchErrors          atomic.Int64
	reconnects           atomic.Int64
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
		MultipleAcks:         s.multipleAcks.Load(),
		AckErrors:            s.ackErrors.Load(),
		Requeued:             s.requeued.Load(),
		BatchErrors:          s.batchErrors.Load(),
		Reconnects:           s.reconnects.Load(),
		DeadLettersPublished: s.deadLettersPublished.Load(),
	}
}
