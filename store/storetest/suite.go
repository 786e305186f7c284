package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

const scope = "edi-invoicer"

// fixture is one test's driver and helpers.
type fixture[TTx any] struct {
	t    *testing.T
	h    Harness[TTx]
	d    store.Driver[TTx]
	desc string
	ctx  context.Context
}

func newFixture[TTx any](t *testing.T, h Harness[TTx]) *fixture[TTx] {
	t.Helper()
	d, desc := h.New(t)
	return &fixture[TTx]{t: t, h: h, d: d, desc: desc, ctx: context.Background()}
}

// processor builds a processor whose handler writes one effect row and then
// calls fail (if set) to decide whether to fail.
func (f *fixture[TTx]) processor(cfg txinbox.Config[TTx], fail func(*txinbox.Message) error) *txinbox.Processor[TTx] {
	f.t.Helper()
	if cfg.Scope == "" {
		cfg.Scope = scope
	}
	if cfg.Handler == nil && cfg.BatchHandler == nil {
		cfg.Handler = func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			if err := f.h.InsertEffect(ctx, tx, m.Scope, m.ID); err != nil {
				return err
			}
			if fail != nil {
				return fail(m)
			}
			return nil
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p, err := txinbox.NewProcessor(f.d, cfg)
	if err != nil {
		f.t.Fatalf("NewProcessor: %v", err)
	}
	f.t.Cleanup(p.Close)
	return p
}

func (f *fixture[TTx]) process(p *txinbox.Processor[TTx], msgs ...*txinbox.Message) []txinbox.Result {
	f.t.Helper()
	res, err := p.Process(f.ctx, msgs)
	if err != nil {
		f.t.Fatalf("Process: %v", err)
	}
	return res
}

func (f *fixture[TTx]) effects() map[string]int {
	f.t.Helper()
	return f.h.Effects(f.t, f.d)
}

func (f *fixture[TTx]) stats() store.Stats {
	f.t.Helper()
	s, err := f.d.(store.Admin).Stats(f.ctx)
	if err != nil {
		f.t.Fatalf("Stats: %v", err)
	}
	return s
}

func (f *fixture[TTx]) wantEffects(want map[string]int) {
	f.t.Helper()
	got := f.effects()
	for k, n := range want {
		if got[k] != n {
			f.t.Errorf("effects[%s] = %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			f.t.Errorf("unexpected effect %s x%d", k, n)
		}
	}
}

func wantOutcomes(t *testing.T, res []txinbox.Result, want ...txinbox.Outcome) {
	t.Helper()
	if len(res) != len(want) {
		t.Fatalf("got %d results, want %d", len(res), len(want))
	}
	for i := range want {
		if res[i].Outcome != want[i] {
			t.Errorf("result[%d] = %v (err %v), want %v", i, res[i].Outcome, res[i].Err, want[i])
		}
	}
}

func msg(id, payload string) *txinbox.Message {
	return &txinbox.Message{ID: id, Source: "invoices", SourcePosition: "0:" + id, PartitionKey: "partner-1",
		Payload: []byte(payload), Headers: []txinbox.Header{{Key: "ce_type", Value: "InvoiceIssued"}}}
}

func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

var errBoom = errors.New("boom: partner endpoint refused")

// Run runs the conformance suite against the store that h adapts.
func Run[TTx any](t *testing.T, h Harness[TTx]) {
	tests := []struct {
		name string
		run  func(*fixture[TTx])
	}{
		{"ProcessedThenDuplicate", testProcessedThenDuplicate[TTx]},
		{"Drift", testDrift[TTx]},
		{"FailureThenSuccess", testFailureThenSuccess[TTx]},
		{"PoisonDeadLettered", testPoison[TTx]},
		{"PermanentError", testPermanent[TTx]},
		{"MissingID", testMissingID[TTx]},
		{"FailureIsolatedInBatch", testFailureIsolated[TTx]},
		{"BatchHandlerBisected", testBatchHandler[TTx]},
		{"RepeatsInOneBatch", testRepeats[TTx]},
		{"ScopesAreSeparate", testScopes[TTx]},
		{"PanicIsRetry", testPanic[TTx]},
		{"OrderedSkipsLaterSamePartition", testOrdered[TTx]},
		{"SameIDFromEightGoroutines", testEightGoroutines[TTx]},
		{"OverlappingBatchesNoDeadlock", testOverlapping[TTx]},
		{"SubmitBatches", testSubmit[TTx]},
		{"CanceledContextCommitsNothing", testCanceled[TTx]},
		{"MigrateTwice", testMigrateTwice[TTx]},
		{"CheckpointStopsBeforeRetry", testCheckpoint[TTx]},
		{"PurgeExpiredInBoundedBatches", testPurge[TTx]},
		{"InspectForgetDrop", testInspectForgetDrop[TTx]},
		{"ScopeStats", testScopeStats[TTx]},
		{"ScopeStatsDeadLetters", testScopeStatsDeadLetters[TTx]},
		{"InboxGauges", testInboxGauges[TTx]},
		{"SameIDFromTwoProcesses", testTwoProcesses[TTx]},
		{"HostileHandlers", testHostileHandlers[TTx]},
		{"HostileInputs", testHostileInputs[TTx]},
		{"AnotherPayloadRecorded", testAnotherPayloadRecorded[TTx]},
		{"OrderedAcrossBatches", testOrderedAcrossBatches[TTx]},
		{"ListPagesAndFilters", testListPagesAndFilters[TTx]},
		{"ReplayDeadLetter", testReplayDeadLetter[TTx]},
		{"OffsetsAsTheInbox", testOffsets[TTx]},
		{"OffsetsDeadLetterMovesPast", testOffsetsDeadLetter[TTx]},
		{"OffsetsFenced", testOffsetsFenced[TTx]},
		{"DriftRuleSQLAndGoAgree", testDriftRuleAgrees[TTx]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(newFixture(t, h))
		})
	}
}

func testProcessedThenDuplicate[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, nil)
	wantOutcomes(f.t, f.process(p, msg("inv-1", "A"), msg("inv-2", "B")), txinbox.Processed, txinbox.Processed)
	wantOutcomes(f.t, f.process(p, msg("inv-1", "A")), txinbox.Duplicate)
	f.wantEffects(map[string]int{scope + "/inv-1": 1, scope + "/inv-2": 1})
	if got := f.h.InboxPayloadHash(f.t, f.d, scope, "inv-1"); !bytes.Equal(got, hashOf("A")) {
		f.t.Errorf("stored payload hash = %x, want sha256(A)", got)
	}
	if s := f.stats(); s.Inbox != 2 || s.Drift != 0 || s.DeadLetters != 0 || s.Attempts != 0 {
		f.t.Errorf("stats = %+v, want 2 inbox rows only", s)
	}
}

func testDrift[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, nil)
	f.process(p, msg("inv-1", "amount=100"))
	wantOutcomes(f.t, f.process(p, msg("inv-1", "amount=999")), txinbox.Drift)
	f.wantEffects(map[string]int{scope + "/inv-1": 1})
	drift, err := f.d.(store.Admin).ListDrift(f.ctx, store.ListFilter{Scope: scope})
	if err != nil {
		f.t.Fatal(err)
	}
	if len(drift) != 1 {
		f.t.Fatalf("drift records = %d, want 1", len(drift))
	}
	r := drift[0]
	if r.MessageID != "inv-1" || r.Source != "invoices" || !bytes.Equal(r.StoredHash, hashOf("amount=100")) ||
		!bytes.Equal(r.ReceivedHash, hashOf("amount=999")) || r.DetectedAt.IsZero() {
		f.t.Errorf("drift record = %+v", r)
	}
	// The original payload stays; a redelivery of it is a plain duplicate.
	wantOutcomes(f.t, f.process(p, msg("inv-1", "amount=100")), txinbox.Duplicate)
}

func testFailureThenSuccess[TTx any](f *fixture[TTx]) {
	var fails atomic.Int32
	fails.Store(1)
	p := f.processor(txinbox.Config[TTx]{}, func(*txinbox.Message) error {
		if fails.Add(-1) >= 0 {
			return errBoom
		}
		return nil
	})
	res := f.process(p, msg("inv-1", "A"))
	wantOutcomes(f.t, res, txinbox.Retry)
	if res[0].Attempts != 1 || !errors.Is(res[0].Err, errBoom) || res[0].RetryAfter <= 0 {
		f.t.Errorf("retry result = %+v", res[0])
	}
	// The failure must not turn the redelivery into a duplicate.
	if h := f.h.InboxPayloadHash(f.t, f.d, scope, "inv-1"); h != nil {
		f.t.Fatal("failed message has an inbox row")
	}
	f.wantEffects(map[string]int{})
	wantOutcomes(f.t, f.process(p, msg("inv-1", "A")), txinbox.Processed)
	f.wantEffects(map[string]int{scope + "/inv-1": 1})
}

func testPoison[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{MaxAttempts: 3}, func(m *txinbox.Message) error {
		if m.ID == "poison" {
			return errBoom
		}
		return nil
	})
	for i := 1; i <= 3; i++ {
		res := f.process(p, msg("poison", "P"), msg(fmt.Sprint("ok-", i), "A"))
		want := txinbox.Retry
		if i == 3 {
			want = txinbox.DeadLettered
		}
		wantOutcomes(f.t, res, want, txinbox.Processed)
		if res[0].Attempts != i {
			f.t.Errorf("attempt %d: Attempts = %d", i, res[0].Attempts)
		}
	}
	dls, err := f.d.(store.Admin).ListDeadLetters(f.ctx, store.ListFilter{})
	if err != nil || len(dls) != 1 {
		f.t.Fatalf("dead letters = %v, %v; want 1", dls, err)
	}
	dl := dls[0]
	if dl.MessageID != "poison" || string(dl.Payload) != "P" || dl.Attempts != 3 || dl.LastError != errBoom.Error() ||
		!bytes.Contains(dl.HeadersJSON, []byte("InvoiceIssued")) || dl.Reason == "" {
		f.t.Errorf("dead letter = %+v", dl)
	}
	// A redelivery of a dead letter is acked without running again.
	wantOutcomes(f.t, f.process(p, msg("poison", "P")), txinbox.DeadLettered)
	f.wantEffects(map[string]int{scope + "/ok-1": 1, scope + "/ok-2": 1, scope + "/ok-3": 1})
	// An operator forgets the dead letter: the next delivery runs again.
	if ok, err := f.d.(store.Admin).Forget(f.ctx, dl.Key, store.AuditEntry{Actor: "test", Reason: "partner fixed"}); !ok || err != nil {
		f.t.Fatalf("Forget = %v, %v", ok, err)
	}
	res := f.process(p, msg("poison", "P"))
	wantOutcomes(f.t, res, txinbox.Retry)
	if res[0].Attempts != 1 {
		f.t.Errorf("attempts after forget = %d, want 1", res[0].Attempts)
	}
}

func testPermanent[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, func(*txinbox.Message) error {
		return txinbox.Permanent(errors.New("invoice has no partner"))
	})
	res := f.process(p, msg("inv-1", "A"))
	wantOutcomes(f.t, res, txinbox.DeadLettered)
	if s := f.stats(); s.DeadLetters != 1 || s.Inbox != 0 {
		f.t.Errorf("stats = %+v", s)
	}
	f.wantEffects(map[string]int{})
}

func testMissingID[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, nil)
	res := f.process(p, msg("", "no id"), msg("inv-1", "A"), msg("", "no id either"))
	wantOutcomes(f.t, res, txinbox.DeadLettered, txinbox.Processed, txinbox.DeadLettered)
	if !errors.Is(res[0].Err, txinbox.ErrNoMessageID) {
		f.t.Errorf("err = %v", res[0].Err)
	}
	dls, err := f.d.(store.Admin).ListDeadLetters(f.ctx, store.ListFilter{Scope: scope})
	if err != nil || len(dls) != 2 {
		f.t.Fatalf("dead letters = %d, %v; want 2", len(dls), err)
	}
	for _, dl := range dls {
		if dl.Reason != "no message id" || len(dl.Payload) == 0 {
			f.t.Errorf("dead letter = %+v", dl)
		}
	}
	f.wantEffects(map[string]int{scope + "/inv-1": 1})
}

func testFailureIsolated[TTx any](f *fixture[TTx]) {
	var redone atomic.Bool
	cfg := txinbox.Config[TTx]{Hooks: []txinbox.Hook{batchHookFunc(func(i txinbox.BatchInfo) {
		if i.Redone {
			redone.Store(true)
		}
	})}}
	p := f.processor(cfg, func(m *txinbox.Message) error {
		if m.ID == "m-3" || m.ID == "m-7" {
			return errBoom
		}
		return nil
	})
	var msgs []*txinbox.Message
	want := map[string]int{}
	for i := range 10 {
		id := fmt.Sprint("m-", i)
		msgs = append(msgs, msg(id, "x"))
		if i != 3 && i != 7 {
			want[scope+"/"+id] = 1
		}
	}
	res := f.process(p, msgs...)
	for i, r := range res {
		wantOC := txinbox.Processed
		if i == 3 || i == 7 {
			wantOC = txinbox.Retry
		}
		if r.Outcome != wantOC {
			f.t.Errorf("m-%d: %v, want %v", i, r.Outcome, wantOC)
		}
	}
	f.wantEffects(want)
	if !redone.Load() {
		f.t.Error("BatchInfo.Redone was never set")
	}
}

func testBatchHandler[TTx any](f *fixture[TTx]) {
	var calls atomic.Int32
	cfg := txinbox.Config[TTx]{BatchHandler: func(ctx context.Context, tx TTx, msgs []*txinbox.Message) error {
		calls.Add(1)
		for _, m := range msgs {
			if err := f.h.InsertEffect(ctx, tx, m.Scope, m.ID); err != nil {
				return err
			}
			if m.ID == "bad" {
				return errBoom
			}
		}
		return nil
	}}
	p := f.processor(cfg, nil)
	wantOutcomes(f.t, f.process(p, msg("a", "1"), msg("b", "2")), txinbox.Processed, txinbox.Processed)
	if calls.Load() != 1 {
		f.t.Errorf("batch handler called %d times for one clean batch, want 1", calls.Load())
	}
	wantOutcomes(f.t, f.process(p, msg("a", "1"), msg("c", "3"), msg("bad", "4"), msg("d", "5")),
		txinbox.Duplicate, txinbox.Processed, txinbox.Retry, txinbox.Processed)
	f.wantEffects(map[string]int{scope + "/a": 1, scope + "/b": 1, scope + "/c": 1, scope + "/d": 1})
}

func testRepeats[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, nil)
	res := f.process(p, msg("r", "A"), msg("r", "A"), msg("r", "B"), msg("s", "S"))
	wantOutcomes(f.t, res, txinbox.Processed, txinbox.Duplicate, txinbox.Drift, txinbox.Processed)
	f.wantEffects(map[string]int{scope + "/r": 1, scope + "/s": 1})
	if s := f.stats(); s.Drift != 1 {
		f.t.Errorf("drift rows = %d, want 1", s.Drift)
	}
}

func testScopes[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, nil)
	a, b := msg("shared-id", "A"), msg("shared-id", "A")
	a.Scope, b.Scope = "billing", "audit"
	wantOutcomes(f.t, f.process(p, a, b), txinbox.Processed, txinbox.Processed)
	f.wantEffects(map[string]int{"billing/shared-id": 1, "audit/shared-id": 1})
}

func testPanic[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
		if m.ID == "p" {
			panic("nil partner")
		}
		return nil
	})
	res := f.process(p, msg("p", "1"), msg("q", "2"))
	wantOutcomes(f.t, res, txinbox.Retry, txinbox.Processed)
	var pe *txinbox.PanicError
	if !errors.As(res[0].Err, &pe) {
		f.t.Errorf("err = %v, want *PanicError", res[0].Err)
	}
	f.wantEffects(map[string]int{scope + "/q": 1})
}

func testOrdered[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{Ordered: true}, func(m *txinbox.Message) error {
		if m.ID == "a2" {
			return errBoom
		}
		return nil
	})
	mk := func(id, pk string) *txinbox.Message { m := msg(id, id); m.PartitionKey = pk; return m }
	res := f.process(p, mk("a1", "A"), mk("a2", "A"), mk("b1", "B"), mk("a3", "A"))
	wantOutcomes(f.t, res, txinbox.Processed, txinbox.Retry, txinbox.Processed, txinbox.Retry)
	if res[3].Attempts != 0 {
		f.t.Errorf("skipped message counted %d attempts", res[3].Attempts)
	}
	f.wantEffects(map[string]int{scope + "/a1": 1, scope + "/b1": 1})
}

func testEightGoroutines[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, nil)
	var wg sync.WaitGroup
	outcomes := make([]txinbox.Outcome, 8)
	for g := range 8 {
		wg.Go(func() {
			res, err := p.Process(f.ctx, []*txinbox.Message{msg("contended", "A")})
			if err != nil {
				f.t.Errorf("goroutine %d: %v", g, err)
				return
			}
			outcomes[g] = res[0].Outcome
		})
	}
	wg.Wait()
	processed := 0
	for _, o := range outcomes {
		switch o {
		case txinbox.Processed:
			processed++
		case txinbox.Duplicate:
		default:
			f.t.Errorf("outcome %v", o)
		}
	}
	if processed != 1 {
		f.t.Errorf("processed %d times, want 1", processed)
	}
	f.wantEffects(map[string]int{scope + "/contended": 1})
}

func testOverlapping[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, nil)
	var wg sync.WaitGroup
	want := map[string]int{}
	for g := range 4 {
		wg.Go(func() {
			var msgs []*txinbox.Message
			for i := range 50 {
				n := i
				if g%2 == 1 {
					n = 49 - i // the reverse order of the others
				}
				msgs = append(msgs, msg(fmt.Sprint("o-", n), "x"))
			}
			if _, err := p.Process(f.ctx, msgs); err != nil {
				f.t.Errorf("batch %d: %v", g, err)
			}
		})
	}
	for i := range 50 {
		want[fmt.Sprint(scope, "/o-", i)] = 1
	}
	wg.Wait()
	f.wantEffects(want)
}

func testSubmit[TTx any](f *fixture[TTx]) {
	var batches atomic.Int32
	p := f.processor(txinbox.Config[TTx]{Hooks: []txinbox.Hook{batchHookFunc(func(txinbox.BatchInfo) { batches.Add(1) })}}, nil)
	var wg sync.WaitGroup
	var dups, processed atomic.Int32
	for i := range 300 {
		wg.Go(func() {
			res, err := p.Submit(f.ctx, msg(fmt.Sprint("s-", i%200), "x"))
			if err != nil {
				f.t.Errorf("Submit: %v", err)
				return
			}
			switch res.Outcome {
			case txinbox.Processed:
				processed.Add(1)
			case txinbox.Duplicate:
				dups.Add(1)
			}
		})
	}
	wg.Wait()
	if processed.Load() != 200 || dups.Load() != 100 {
		f.t.Errorf("processed %d, duplicates %d; want 200, 100", processed.Load(), dups.Load())
	}
	if batches.Load() >= 300 {
		f.t.Errorf("%d batches for 300 concurrent submits: nothing was batched", batches.Load())
	}
	if got := len(f.effects()); got != 200 {
		f.t.Errorf("%d ids with effects, want 200", got)
	}
	p.Close()
	if _, err := p.Submit(f.ctx, msg("late", "x")); !errors.Is(err, txinbox.ErrClosed) {
		f.t.Errorf("Submit after Close = %v, want ErrClosed", err)
	}
}

func testCanceled[TTx any](f *fixture[TTx]) {
	ctx, cancel := context.WithCancel(f.ctx)
	p := f.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
		cancel()
		return ctx.Err()
	})
	res, err := p.Process(ctx, []*txinbox.Message{msg("c", "x")})
	if err == nil {
		f.t.Fatalf("Process with a canceled context = %+v, want an error", res)
	}
	if res[0].Outcome.Ack() {
		f.t.Errorf("outcome %v would be acked", res[0].Outcome)
	}
	f.wantEffects(map[string]int{})
	if s := f.stats(); s.Inbox != 0 || s.Attempts != 0 {
		f.t.Errorf("stats = %+v: a canceled batch left rows", s)
	}
}

func testMigrateTwice[TTx any](f *fixture[TTx]) {
	a := f.d.(store.Admin)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := a.Migrate(f.ctx); err != nil {
				f.t.Errorf("Migrate again: %v", err)
			}
		})
	}
	wg.Wait()
	p := f.processor(txinbox.Config[TTx]{}, nil)
	wantOutcomes(f.t, f.process(p, msg("after-migrate", "x")), txinbox.Processed)
}
