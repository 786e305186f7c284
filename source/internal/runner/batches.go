package runner

import (
	"sync/atomic"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/outcomes"
)

// Batches counts what became of a consumer's batches: the outcomes of
// their messages, the transactions that did not commit, and how many of
// those failed in a row. One goroutine calls Done; the counters may be
// read from any.
type Batches struct {
	// Outcomes counts the results by outcome.
	Outcomes outcomes.Counter
	// Errors counts the batch transactions that did not commit.
	Errors   atomic.Int64
	failures int
}

// Done counts the results of a batch of n messages whose Process returned
// res and err. It returns the results, n zero ones when res is nil (a
// usage error: nothing committed), and, when err is not nil, the count of
// consecutive batches that failed, this one included (0 when err is nil).
func (b *Batches) Done(res []txinbox.Result, n int, err error) ([]txinbox.Result, int) {
	if res == nil {
		res = make([]txinbox.Result, n)
	}
	b.Outcomes.Count(res)
	if err == nil {
		b.failures = 0
		return res, 0
	}
	b.failures++
	b.Errors.Add(1)
	return res, b.failures
}
