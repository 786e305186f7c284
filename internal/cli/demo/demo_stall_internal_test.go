package demo

import (
	"strings"
	"testing"
	"time"
)

// TestStallWatch: only an acknowledged message is progress. A consumer
// that answers every delivery at once with a nack or a retry (every batch
// failing) stalls the demo after demoStallTimeout, and the error says what
// it answered; an ack or another outcome resets the watch.
func TestStallWatch(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	w := newStallWatch(t0)
	at := t0
	for i := range 1000 {
		at = t0.Add(time.Duration(i) * demoStallTimeout / 500)
		w.reply(demoReply{Nack: int64(i + 1), Error: "failed to encode args[0]"}, at)
	}
	w.reply(demoReply{Outcome: "retry"}, at)
	if d, stalled := w.stalled(at); !stalled || d < demoStallTimeout {
		t.Errorf("after %s of nacks and retries only: stalled %v (%s), want a stall", at.Sub(t0), stalled, d)
	}
	if got := w.refusals(); !strings.Contains(got, "refused 1001 deliveries") || !strings.Contains(got, "failed to encode args[0]") {
		t.Errorf("refusals = %q", got)
	}
	for _, progress := range []demoReply{{Ack: 7, Outcome: "processed"}, {Outcome: "duplicate"}, {Outcome: "dead_lettered"}} {
		w.reply(demoReply{Nack: 1}, at)
		w.reply(progress, at)
		if _, stalled := w.stalled(at.Add(demoStallTimeout - time.Second)); stalled || w.refusals() != "" {
			t.Errorf("after %+v: stalled %v, refusals %q; want the watch reset", progress, stalled, w.refusals())
		}
	}
	if _, stalled := w.stalled(at.Add(demoStallTimeout + time.Second)); !stalled {
		t.Error("no reply at all for longer than demoStallTimeout: not stalled")
	}
}
