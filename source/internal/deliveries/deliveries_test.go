package deliveries

import (
	"errors"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
)

// TestGuardDoesNotCountFailedBatches: a message delivered 25 times, 20 of
// them after its whole batch failed (the database was away), has had 5
// deliveries of its own: the guard (MaxDeliveries 20) lets its handler
// run. Once those excuses are gone (it was acked and comes again, or the
// consumer restarted) the guard dead-letters it with a reason naming the
// counts.
func TestGuardDoesNotCountFailedBatches(t *testing.T) {
	ex := NewExcuses()
	g := &Guard{Max: 20, Verb: "delivered", Excused: ex}
	check := func(m *txinbox.Message, count int) error {
		m.Refusal = nil
		g.Check(m, count)
		return m.Refusal
	}
	m := &txinbox.Message{ID: "m1", Source: "s"}
	other := &txinbox.Message{ID: "m2", Source: "s"}
	for range 20 {
		ex.Record([]*txinbox.Message{m, other}, nil) // the batch failed as a whole
	}
	if err := check(m, 25); err != nil {
		t.Fatalf("guard = %v; want the handler run", err)
	}
	// A Retry keeps the excuses; an ack forgets them.
	ex.Record([]*txinbox.Message{m}, []txinbox.Result{{Outcome: txinbox.Retry}})
	if err := check(m, 25); err != nil {
		t.Fatalf("after a Retry: guard = %v", err)
	}
	ex.Record([]*txinbox.Message{m}, []txinbox.Result{{Outcome: txinbox.Processed}})
	err := check(m, 25)
	var perm *txinbox.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "delivered 25 times, more than MaxDeliveries (20)") {
		t.Fatalf("after the ack: guard = %v, want a permanent error naming the counts", err)
	}
	if err := check(other, 40); err != nil {
		t.Errorf("m2, 20 of 40 deliveries excused: guard = %v", err)
	}
	if err := check(other, 41); err == nil || !strings.Contains(err.Error(), "even without the 20 after failures of a whole batch") {
		t.Errorf("m2, 20 of 41 deliveries excused: guard = %v, want a refusal naming the excused", err)
	}
	var nilEx *Excuses
	nilEx.Record([]*txinbox.Message{m}, nil) // must not panic
	if err := check(&txinbox.Message{ID: "m3"}, 20); err != nil {
		t.Errorf("20 of MaxDeliveries 20: guard = %v, want none", err)
	}
}
