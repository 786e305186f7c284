package amqp

import (
	"sync/atomic"

	"github.com/txinbox/txinbox/source"
)

// Stats counts what a Consumer did since it was created.
type Stats struct {
	// Outcomes counts the outcomes and the batch errors.
	source.Outcomes
	// Acked counts deliveries acked; MultipleAcks the batches acked with
	// one multiple-ack; AckErrors acks lost with their channel (the
	// delivery comes back as a duplicate).
	Acked        int64
	MultipleAcks int64
	AckErrors    int64
	// Requeued counts deliveries held, then nacked with requeue.
	Requeued int64
	// Reconnects counts connections dialed again after a loss.
	Reconnects int64
	// DeadLettersPublished counts copies sent to DeadLetterExchange.
	DeadLettersPublished int64
}

type stats struct {
	acked                atomic.Int64
	multipleAcks         atomic.Int64
	ackErrors            atomic.Int64
	requeued             atomic.Int64
	reconnects           atomic.Int64
	deadLettersPublished atomic.Int64
}

// Stats returns a snapshot of the consumer's counters.
func (c *Consumer) Stats() Stats {
	s := &c.stats
	return Stats{
		Outcomes:             c.base.Outcomes(),
		Acked:                s.acked.Load(),
		MultipleAcks:         s.multipleAcks.Load(),
		AckErrors:            s.ackErrors.Load(),
		Requeued:             s.requeued.Load(),
		Reconnects:           s.reconnects.Load(),
		DeadLettersPublished: s.deadLettersPublished.Load(),
	}
}
