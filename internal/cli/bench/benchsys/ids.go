package benchsys

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
)

// IDSource hands out message ids; a share of them repeat an id handed out
// four rounds of batches ago or earlier: a redelivery of a message that
// committed (a repeat of one still in flight would wait for its lock,
// which measures lock waits, not the inbox).
type IDSource struct {
	next   atomic.Int64
	dup    float64
	behind int64
	prefix string
}

// IDSources numbers the sources, so that runs on tables that are not
// emptied in between (the growth scenario) never reuse an id.
var idSources atomic.Int64

// NewIDSource returns a source of ids of which the share dup repeat one
// of the ids it gave, at least behind ids back.
func NewIDSource(dup float64, behind int) *IDSource {
	return &IDSource{dup: dup, behind: int64(behind), prefix: fmt.Sprintf("r%d-", idSources.Add(1))}
}

// ID returns the next id, and whether it repeats one.
func (s *IDSource) ID(rng *rand.Rand) (string, bool) {
	if s.dup > 0 && rng.Float64() < s.dup {
		if n := s.next.Load(); n > s.behind {
			return s.prefix + strconv.FormatInt(n-s.behind-rng.Int64N(min(n-s.behind, 10000)), 10), true
		}
	}
	return s.prefix + strconv.FormatInt(s.next.Add(1), 10), false
}
