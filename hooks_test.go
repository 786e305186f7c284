package txinbox_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
)

// recordingHook keeps every BatchInfo and AckInfo it is given.
type recordingHook struct {
	mu      sync.Mutex
	batches []txinbox.BatchInfo
	acks    []txinbox.AckInfo
}

func (h *recordingHook) OnBatch(_ context.Context, info txinbox.BatchInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.batches = append(h.batches, info)
}

func (h *recordingHook) OnAck(_ context.Context, info txinbox.AckInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acks = append(h.acks, info)
}

func TestBatchInfoHandlerAndCommitDurations(t *testing.T) {
	const nap = 2 * time.Millisecond
	hook := &recordingHook{}
	p, err := txinbox.NewProcessor(sqlitetest.Open(t), txinbox.Config[*sql.Tx]{Scope: "billing", Hooks: []txinbox.Hook{hook},
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { time.Sleep(nap); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.Process(ctx, []*txinbox.Message{{ID: "a", Payload: []byte("1")}, {ID: "b", Payload: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	if len(hook.batches) != 1 {
		t.Fatalf("OnBatch called %d times, want 1", len(hook.batches))
	}
	info := hook.batches[0]
	// Lower bounds only: two handlers slept at least nap each.
	if info.HandlerDuration < 2*nap {
		t.Errorf("HandlerDuration = %v, want >= %v (two handlers slept %v each)", info.HandlerDuration, 2*nap, nap)
	}
	if info.CommitDuration <= 0 {
		t.Errorf("CommitDuration = %v for a committed batch, want > 0", info.CommitDuration)
	}
	if info.HandlerDuration+info.CommitDuration > info.Duration {
		t.Errorf("HandlerDuration %v + CommitDuration %v exceed Duration %v", info.HandlerDuration, info.CommitDuration, info.Duration)
	}

	// The redelivery: duplicates only, no handler runs, the batch commits.
	if _, err := p.Process(ctx, []*txinbox.Message{{ID: "a", Payload: []byte("1")}, {ID: "b", Payload: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	if info := hook.batches[1]; info.New != 0 || info.HandlerDuration != 0 || info.CommitDuration <= 0 {
		t.Errorf("duplicates-only batch: New %d, HandlerDuration %v, CommitDuration %v; want 0, 0, > 0",
			info.New, info.HandlerDuration, info.CommitDuration)
	}
}

func TestBatchInfoCountsHandlerTimeOfTheSavepointRedo(t *testing.T) {
	const nap = 2 * time.Millisecond
	hook := &recordingHook{}
	var calls int
	p, err := txinbox.NewProcessor(sqlitetest.Open(t), txinbox.Config[*sql.Tx]{Scope: "billing", Hooks: []txinbox.Hook{hook},
		Handler: func(_ context.Context, _ *sql.Tx, m *txinbox.Message) error {
			calls++
			time.Sleep(nap)
			if m.ID == "bad" {
				return errors.New("refused")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Process(context.Background(), []*txinbox.Message{{ID: "bad", Payload: []byte("1")}, {ID: "good", Payload: []byte("2")}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != txinbox.Retry || res[1].Outcome != txinbox.Processed {
		t.Fatalf("outcomes %v %v, want retry processed", res[0].Outcome, res[1].Outcome)
	}
	// The optimistic pass ran "bad" (which failed), the redo ran "good".
	if calls != 2 || len(hook.batches) != 1 {
		t.Fatalf("handler calls %d, batches %d; want 2 and 1", calls, len(hook.batches))
	}
	info := hook.batches[0]
	if !info.Redone || info.HandlerDuration < 2*nap || info.CommitDuration <= 0 {
		t.Errorf("redone %v, HandlerDuration %v (want >= %v), CommitDuration %v (want > 0)",
			info.Redone, info.HandlerDuration, 2*nap, info.CommitDuration)
	}
}

func TestBatchInfoCommitDurationZeroWhenNotCommitted(t *testing.T) {
	hook := &recordingHook{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := txinbox.NewProcessor(sqlitetest.Open(t), txinbox.Config[*sql.Tx]{Scope: "billing", Hooks: []txinbox.Hook{hook},
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error {
			cancel() // the caller gives up while the handler runs: no commit
			return context.Canceled
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Process(ctx, []*txinbox.Message{{ID: "a", Payload: []byte("1")}}); err == nil {
		t.Fatal("Process returned nil after the context was cancelled in the handler")
	}
	if len(hook.batches) != 1 {
		t.Fatalf("OnBatch called %d times, want 1", len(hook.batches))
	}
	if info := hook.batches[0]; info.Err == nil || info.CommitDuration != 0 || info.HandlerDuration <= 0 {
		t.Errorf("failed batch: Err %v (want non-nil), CommitDuration %v (want 0), HandlerDuration %v (want > 0)",
			info.Err, info.CommitDuration, info.HandlerDuration)
	}
}

func TestReportAckReachesAckHooks(t *testing.T) {
	hook, other := &recordingHook{}, &recordingHook{}
	p, err := txinbox.NewProcessor(sqlitetest.Open(t), txinbox.Config[*sql.Tx]{Scope: "billing", Hooks: []txinbox.Hook{hook, other},
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	lost := errors.New("channel closed")
	ctx := context.Background()
	p.ReportAck(ctx, txinbox.AckInfo{Source: "invoices", Messages: 7, Duration: 3 * time.Millisecond})
	p.ReportAck(ctx, txinbox.AckInfo{Scope: "other", Source: "orders", Messages: 1, Duration: time.Millisecond, Err: lost})
	want := []txinbox.AckInfo{
		{Scope: "billing", Source: "invoices", Messages: 7, Duration: 3 * time.Millisecond}, // Scope filled in
		{Scope: "other", Source: "orders", Messages: 1, Duration: time.Millisecond, Err: lost},
	}
	for _, h := range []*recordingHook{hook, other} {
		if len(h.acks) != len(want) {
			t.Fatalf("hook got %d acks, want %d", len(h.acks), len(want))
		}
		for i := range want {
			if h.acks[i] != want[i] {
				t.Errorf("ack %d = %+v, want %+v", i, h.acks[i], want[i])
			}
		}
	}
}
