package outbox_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox/outbox"
)

// seamStore is an outbox.Store written outside package outbox, as
// outboxpg and outboxlite are: one batch of rows, then nothing due. It
// records what the relay asked for and what it handed back.
type seamStore struct {
	outbox.Store // the operator methods, unused here

	mu       sync.Mutex
	rows     []*outbox.Message
	specs    []outbox.ClaimSpec
	outcomes []outbox.Outcome
}

func (s *seamStore) Claim(_ context.Context, spec outbox.ClaimSpec) (outbox.Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs = append(s.specs, spec)
	rows := s.rows
	s.rows = nil
	return &seamBatch{s: s, msgs: rows}, nil
}

type seamBatch struct {
	s    *seamStore
	msgs []*outbox.Message
}

func (b *seamBatch) Messages() []*outbox.Message { return b.msgs }

func (b *seamBatch) Finish(_ context.Context, outs []outbox.Outcome) error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	b.s.outcomes = append(b.s.outcomes, outs...)
	return nil
}

// TestAStoreOutsideThePackageDrivesTheRelay implements outbox.Store from
// outside package outbox, through the exported seam only: the relay claims
// with the configured batch size, ordering and lease under a fresh owner
// per claim, never sends an Unreadable row, and hands Finish one outcome
// per row in the order of the batch: a confirmed send with its receipt, a
// retry with the wait its target asked for, a failure for good with the
// target's error, an unreadable row failed with its reason.
func TestAStoreOutsideThePackageDrivesTheRelay(t *testing.T) {
	st := &seamStore{rows: []*outbox.Message{
		{ID: 1, Scope: "s", MessageID: "ok", Attempt: 1},
		{ID: 2, Scope: "s", MessageID: "busy", Attempt: 1},
		{ID: 3, Scope: "s", MessageID: "refused", Attempt: 1},
		{ID: 4, Scope: "s", MessageID: "garbled", Attempt: 1, Unreadable: errors.New("headers column: junk")},
	}}
	rec := newRecorder(false)
	rec.fail = func(m *outbox.Message) error {
		switch m.MessageID {
		case "busy":
			return outbox.RetryAfter(errors.New("busy"), time.Hour)
		case "refused":
			return outbox.Permanent(errors.New("refused"))
		}
		return nil
	}
	cfg := outbox.Config{Target: rec, BatchSize: 7, Ordered: true, LeaseDuration: 3 * time.Minute, Logger: discard}
	if n, err := newRelay(t, st, cfg).RunOnce(context.Background()); n != 1 || err != nil {
		t.Fatalf("RunOnce = %d, %v; want 1 sent", n, err)
	}
	if len(st.specs) != 2 {
		t.Fatalf("%d claims, want 2 (the batch, then nothing due)", len(st.specs))
	}
	for _, sp := range st.specs {
		if sp.N != 7 || !sp.Ordered || sp.Lease != 3*time.Minute || sp.Owner == "" {
			t.Errorf("ClaimSpec = %+v, want N 7, Ordered, Lease 3m and an owner", sp)
		}
	}
	if st.specs[0].Owner == st.specs[1].Owner {
		t.Errorf("two claims share the owner %q", st.specs[0].Owner)
	}
	if rec.attempts["s/garbled/0"] != 0 {
		t.Error("the unreadable row was sent")
	}
	checkSeamOutcomes(t, st.outcomes)
}

func checkSeamOutcomes(t *testing.T, outs []outbox.Outcome) {
	t.Helper()
	if len(outs) != 4 {
		t.Fatalf("Finish got %d outcomes, want 4: %+v", len(outs), outs)
	}
	if o := outs[0]; o.Result != outbox.Sent || string(o.Receipt) != "ok s/ok/0" || o.Err != "" {
		t.Errorf("sent row: %+v", o)
	}
	if o := outs[1]; o.Result != outbox.Retried || o.Delay < time.Hour || !strings.Contains(o.Err, "busy") {
		t.Errorf("retried row: %+v, want Retried after at least 1h with its error", o)
	}
	if o := outs[2]; o.Result != outbox.Failed || !strings.Contains(o.Err, "refused") {
		t.Errorf("refused row: %+v, want Failed with its error", o)
	}
	if o := outs[3]; o.Result != outbox.Failed || !strings.Contains(o.Err, "cannot be read: headers column: junk") {
		t.Errorf("unreadable row: %+v, want Failed with its reason", o)
	}
}
