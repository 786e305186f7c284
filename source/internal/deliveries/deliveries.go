// Package deliveries bounds how often a broker may deliver one message: a
// consumer that crashes while handling a message never records the
// failure, so only the broker's own delivery count can end that loop.
package deliveries

import (
	"fmt"
	"sync"

	"github.com/txinbox/txinbox"
)

// Guard dead-letters a message its broker delivered more than Max times,
// without running the handler. Deliveries that its Excuses record (their
// batch failed for a reason tied to no message: the database was away)
// are not counted: they were not the message's fault.
type Guard struct {
	// Max is the source's MaxDeliveries.
	Max int
	// Verb names the count in the reason ("delivered", "received").
	Verb string
	// Excused are the deliveries not counted; nil excuses none.
	Excused *Excuses
}

// Check sets m.Refusal to a permanent error when count, the broker's
// delivery count of m (this delivery included), less the deliveries
// excused, exceeds Max: the processor then dead-letters m, if it is new,
// with the reason instead of running the handler.
func (g *Guard) Check(m *txinbox.Message, count int) {
	if count <= g.Max {
		return
	}
	switch e := g.Excused.count(m); {
	case e == 0:
		m.Refusal = txinbox.Permanent(fmt.Errorf("%s %d times, more than MaxDeliveries (%d)", g.Verb, count, g.Max))
	case count-e > g.Max:
		m.Refusal = txinbox.Permanent(fmt.Errorf("%s %d times, more than MaxDeliveries (%d) even without the %d after failures of a whole batch",
			g.Verb, count, g.Max, e))
	}
}

// maxExcused bounds the messages Excuses remembers; past it, it forgets
// one at random for each new one (that message's guard then counts every
// delivery again, as without Excuses).
const maxExcused = 1 << 18

// Excuses counts, per message, the deliveries that ended without the
// message's fault: its batch failed as a whole (the database was down) and
// the broker delivers it again. It lives in the consumer's memory: after a
// crash (the case the guard is for) nothing is excused. Safe for
// concurrent use; a nil *Excuses excuses nothing.
type Excuses struct {
	mu sync.Mutex
	n  map[string]int
}

// NewExcuses returns an empty Excuses.
func NewExcuses() *Excuses { return &Excuses{n: map[string]int{}} }

func excuseKey(m *txinbox.Message) string { return m.Source + "\x00" + m.ID }

// Record notes what became of a batch: a message with no outcome (the
// batch failed as a whole, for a reason tied to none of its messages) has
// one delivery excused; a message whose result may be acked is forgotten,
// as it is not delivered again. A Retry (its handler failed: the attempt
// is the inbox's to count) changes nothing.
func (e *Excuses) Record(msgs []*txinbox.Message, res []txinbox.Result) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, m := range msgs {
		switch {
		case i >= len(res) || res[i].Outcome == 0:
			k := excuseKey(m)
			if _, ok := e.n[k]; !ok && len(e.n) >= maxExcused {
				for old := range e.n {
					delete(e.n, old)
					break
				}
			}
			e.n[k]++
		case res[i].Outcome.Ack() && len(e.n) > 0:
			delete(e.n, excuseKey(m))
		}
	}
}

func (e *Excuses) count(m *txinbox.Message) int {
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[excuseKey(m)]
}
