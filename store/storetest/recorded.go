package storetest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// failureHookDriver runs before ahead of each RecordFailures: to let
// another processor commit a key between a failed batch's commit and the
// recording of its failures.
type failureHookDriver[TTx any] struct {
	store.Driver[TTx]
	before func()
}

func (d *failureHookDriver[TTx]) RecordFailures(ctx context.Context, rows []store.FailureRow, maxAttempts int) ([]store.FailureResult, error) {
	d.before()
	return d.Driver.RecordFailures(ctx, rows, maxAttempts)
}

func (f *fixture[TTx]) wantDrift(t *testing.T, n int, id, stored, received string) {
	t.Helper()
	drift, err := f.d.(store.Admin).ListDrift(f.ctx, store.ListFilter{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) != n {
		t.Fatalf("drift records = %d, want %d", len(drift), n)
	}
	if n == 0 {
		return
	}
	r := drift[len(drift)-1]
	if r.MessageID != id || !bytes.Equal(r.StoredHash, hashOf(stored)) || !bytes.Equal(r.ReceivedHash, hashOf(received)) {
		t.Errorf("drift record %q: stored %x received %x, want sha256(%s) and sha256(%s)", r.MessageID, r.StoredHash, r.ReceivedHash, stored, received)
	}
}

// testAnotherPayloadRecorded: every payload received under a known id is
// recorded somewhere: in the inbox, the dead letters or the drift table.
func testAnotherPayloadRecorded[TTx any](f *fixture[TTx]) {
	f.t.Run("FailedWhileAnotherCommitted", func(t *testing.T) {
		// A fails K/p1 while B commits K/p2: A's copy is drift.
		g := newFixture(t, f.h)
		b := g.processor(txinbox.Config[TTx]{}, nil)
		var bres []txinbox.Result
		hooked := &failureHookDriver[TTx]{Driver: g.d, before: func() {
			var err error
			if bres, err = b.Process(g.ctx, []*txinbox.Message{msg("K", "p2")}); err != nil {
				t.Errorf("B: %v", err)
			}
		}}
		a, err := txinbox.NewProcessor[TTx](hooked, txinbox.Config[TTx]{Scope: scope, Logger: quiet(),
			Handler: func(context.Context, TTx, *txinbox.Message) error { return errBoom }})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Process(g.ctx, []*txinbox.Message{msg("K", "p1")})
		if err != nil {
			t.Fatal(err)
		}
		wantOutcomes(t, bres, txinbox.Processed)
		wantOutcomes(t, res, txinbox.Drift)
		g.wantDrift(t, 1, "K", "p2", "p1")
		if s := g.stats(); s.Attempts != 0 {
			t.Errorf("attempts rows = %d, want 0", s.Attempts)
		}
	})
	f.t.Run("DeadLetterRedeliveredWithAnotherPayload", func(t *testing.T) {
		g := newFixture(t, f.h)
		p := g.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
			return txinbox.Permanent(errBoom)
		})
		wantOutcomes(t, g.process(p, msg("K", "p1")), txinbox.DeadLettered)
		wantOutcomes(t, g.process(p, msg("K", "p2")), txinbox.Drift)
		g.wantDrift(t, 1, "K", "p1", "p2")
		wantOutcomes(t, g.process(p, msg("K", "p1")), txinbox.DeadLettered)
		g.wantDrift(t, 1, "K", "p1", "p2")
		g.wantEffects(map[string]int{})
	})
	f.t.Run("SecondCopyBehindPermanentFailure", func(t *testing.T) {
		g := newFixture(t, f.h)
		p := g.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
			return txinbox.Permanent(errBoom)
		})
		res := g.process(p, msg("K", "p1"), msg("K", "p2"), msg("K", "p1"))
		// The copy with another payload is not acked before it is recorded.
		wantOutcomes(t, res, txinbox.DeadLettered, txinbox.Retry, txinbox.DeadLettered)
		g.wantDrift(t, 0, "", "", "")
		wantOutcomes(t, g.process(p, msg("K", "p2")), txinbox.Drift)
		g.wantDrift(t, 1, "K", "p1", "p2")
	})
	f.t.Run("SecondCopyBehindDeadLetter", func(t *testing.T) {
		g := newFixture(t, f.h)
		p := g.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
			return txinbox.Permanent(errBoom)
		})
		wantOutcomes(t, g.process(p, msg("K", "p1")), txinbox.DeadLettered)
		wantOutcomes(t, g.process(p, msg("K", "p1"), msg("K", "p3")), txinbox.DeadLettered, txinbox.Drift)
		g.wantDrift(t, 1, "K", "p1", "p3")
	})
}

// testOrderedAcrossBatches: with Ordered, a message left for Retry in one
// batch of a Process call holds back the later messages of its partition
// key in the later batches of the call too.
func testOrderedAcrossBatches[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{Ordered: true, MaxBatchSize: 2}, func(m *txinbox.Message) error {
		if m.ID == "a1" {
			return errBoom
		}
		return nil
	})
	mk := func(id, pk string) *txinbox.Message { m := msg(id, id); m.PartitionKey = pk; return m }
	res := f.process(p, mk("a1", "A"), mk("b1", "B"), mk("a2", "A"), mk("b2", "B"), mk("b3", "B"), mk("a3", "A"))
	wantOutcomes(f.t, res, txinbox.Retry, txinbox.Processed, txinbox.Retry, txinbox.Processed, txinbox.Processed, txinbox.Retry)
	for _, i := range []int{2, 5} {
		if res[i].RetryAfter <= 0 || res[i].Err == nil {
			f.t.Errorf("skipped %d: %+v", i, res[i])
		}
	}
	f.wantEffects(map[string]int{scope + "/b1": 1, scope + "/b2": 1, scope + "/b3": 1})
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
