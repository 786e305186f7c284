package demo

import (
	"fmt"
	"time"
)

// stallWatch tells when a consumer has made no progress for
// demoStallTimeout: no message acknowledged. Any reply is not progress: a
// consumer that fails every batch answers each delivery at once with a
// nack (or a retry outcome), and the broker delivers it again, for ever.
type stallWatch struct {
	last time.Time
	// refused counts the nacks and retries since the last progress,
	// lastErr is the last one's error.
	refused int
	lastErr string
}

func newStallWatch(now time.Time) *stallWatch { return &stallWatch{last: now} }

// reply notes a reply of the consumer at now.
func (s *stallWatch) reply(r demoReply, now time.Time) {
	switch {
	case r.Ack != 0 || r.Outcome != "" && r.Outcome != "retry":
		s.last, s.refused, s.lastErr = now, 0, ""
	case r.Nack != 0 || r.Outcome == "retry":
		s.refused++
		if r.Error != "" {
			s.lastErr = r.Error
		}
	}
}

// stalled returns how long no message was acknowledged at now, and
// whether that is longer than demoStallTimeout.
func (s *stallWatch) stalled(now time.Time) (time.Duration, bool) {
	d := now.Sub(s.last)
	return d, d > demoStallTimeout
}

// refusals says what the consumer answered meanwhile: "" when nothing.
func (s *stallWatch) refusals() string {
	switch {
	case s.refused == 0:
		return ""
	case s.lastErr == "":
		return fmt.Sprintf("; it refused %d deliveries meanwhile", s.refused)
	}
	return fmt.Sprintf("; it refused %d deliveries meanwhile, the last with: %s", s.refused, s.lastErr)
}
