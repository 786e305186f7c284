// Package outcomes counts processing outcomes for the sources' Stats.
package outcomes

import (
	"sync/atomic"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
)

// Counter counts results by outcome; safe for concurrent use.
type Counter struct {
	n [txinbox.DeadLettered + 1]atomic.Int64
}

// Count adds each result's outcome (zero outcomes, of batches that did not
// commit, are not counted).
func (c *Counter) Count(res []txinbox.Result) {
	for _, r := range res {
		if r.Outcome >= txinbox.Processed && r.Outcome <= txinbox.DeadLettered {
			c.n[r.Outcome].Add(1)
		}
	}
}

// Load returns the count of o.
func (c *Counter) Load(o txinbox.Outcome) int64 { return c.n[o].Load() }

// Snapshot returns the counts, with batchErrors, the batch transactions
// that did not commit.
func (c *Counter) Snapshot(batchErrors int64) source.Outcomes {
	return source.Outcomes{
		Processed: c.Load(txinbox.Processed), Duplicates: c.Load(txinbox.Duplicate), Drift: c.Load(txinbox.Drift),
		DeadLettered: c.Load(txinbox.DeadLettered), Retries: c.Load(txinbox.Retry), BatchErrors: batchErrors,
	}
}
