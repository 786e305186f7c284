package deliveries

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
)

// TestGuardDoesNotCountFailedBatches: a message delivered 25 times, 20 of
// them after its whole batch failed (the database was away), has had 5
// deliveries of its own: the guard (MaxDeliveries 20) runs its handler.
// Once those excuses are gone (it was acked and comes again, or the
// consumer restarted) the guard dead-letters it with a reason naming the
// counts.
func TestGuardDoesNotCountFailedBatches(t *testing.T) {
	ran := 0
	cfg := txinbox.Config[struct{}]{Handler: func(context.Context, struct{}, *txinbox.Message) error { ran++; return nil }}
	ex := NewExcuses()
	h, _ := Guard(cfg, "count", "delivered", 20, ex)
	m := &txinbox.Message{ID: "m1", Source: "s"}
	other := &txinbox.Message{ID: "m2", Source: "s"}
	for range 20 {
		ex.Record([]*txinbox.Message{m, other}, nil) // the batch failed as a whole
	}
	m.Headers = []txinbox.Header{{Key: "count", Value: "25"}}
	if err := h(context.Background(), struct{}{}, m); err != nil || ran != 1 {
		t.Fatalf("guard = %v, handler ran %d times; want the handler run", err, ran)
	}
	// A Retry keeps the excuses; an ack forgets them.
	ex.Record([]*txinbox.Message{m}, []txinbox.Result{{Outcome: txinbox.Retry}})
	if err := h(context.Background(), struct{}{}, m); err != nil {
		t.Fatalf("after a Retry: guard = %v", err)
	}
	ex.Record([]*txinbox.Message{m}, []txinbox.Result{{Outcome: txinbox.Processed}})
	err := h(context.Background(), struct{}{}, m)
	var perm *txinbox.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "delivered 25 times, more than MaxDeliveries (20)") {
		t.Fatalf("after the ack: guard = %v, want a permanent error naming the counts", err)
	}
	other.Headers = []txinbox.Header{{Key: "count", Value: strconv.Itoa(40)}}
	if err := h(context.Background(), struct{}{}, other); err != nil {
		t.Errorf("m2, 20 of 40 deliveries excused: guard = %v", err)
	}
	var nilEx *Excuses
	nilEx.Record([]*txinbox.Message{m}, nil) // must not panic
}
