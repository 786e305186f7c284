package kafka

import (
	"sync/atomic"

	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/internal/outcomes"
)

// Stats counts what a Consumer did since it was created.
type Stats struct {
	// Outcomes counts the records by outcome (a record retried twice
	// counts twice) and the batch transactions that did not commit.
	source.Outcomes
	// FastPath counts records at or below their partition's watermark,
	// acked as duplicates without an inbox lookup (offset key only).
	FastPath int64
	// Resumed counts partition assignments that started after the
	// database watermark rather than at Kafka's committed offset.
	Resumed int64
	// Rewinds counts partitions set back to their first record not acked.
	Rewinds int64
	// Commits and CommitErrors count offset commits.
	Commits      int64
	CommitErrors int64
	// DeadLettersProduced counts records copied to the dead-letter topic.
	DeadLettersProduced int64
}

type stats struct {
	outcomes            outcomes.Counter
	fastPath            atomic.Int64
	resumed             atomic.Int64
	batchErrors         atomic.Int64
	rewinds             atomic.Int64
	commits             atomic.Int64
	commitErrors        atomic.Int64
	deadLettersProduced atomic.Int64
}

// Stats returns a snapshot of the consumer's counters.
func (c *Consumer) Stats() Stats {
	s := &c.stats
	return Stats{
		Outcomes:            s.outcomes.Snapshot(s.batchErrors.Load()),
		FastPath:            s.fastPath.Load(),
		Resumed:             s.resumed.Load(),
		Rewinds:             s.rewinds.Load(),
		Commits:             s.commits.Load(),
		CommitErrors:        s.commitErrors.Load(),
		DeadLettersProduced: s.deadLettersProduced.Load(),
	}
}
