package storetest

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// The parts of the suite that follow a message past its batch:
// checkpoints, the purge, inspect, forget and drop, and the admin counts.

type batchHookFunc func(txinbox.BatchInfo)

func (h batchHookFunc) OnBatch(_ context.Context, i txinbox.BatchInfo) { h(i) }

func testCheckpoint[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{MaxBatchSize: 3}, func(m *txinbox.Message) error {
		if m.ID == "off-14" {
			return errBoom
		}
		return nil
	})
	batch := func(from, to int64) ([]*txinbox.Message, txinbox.Checkpoint) {
		cp := txinbox.Checkpoint{Source: "invoices", Partition: 3}
		var msgs []*txinbox.Message
		for o := from; o <= to; o++ {
			msgs = append(msgs, msg(fmt.Sprint("off-", o), "x"))
			cp.Positions = append(cp.Positions, o)
		}
		return msgs, cp
	}
	want := func(pos int64) {
		f.t.Helper()
		got, err := p.Checkpoints(f.ctx, "invoices")
		if err != nil {
			f.t.Fatal(err)
		}
		if got[3] != pos {
			f.t.Errorf("checkpoint = %v, want partition 3 at %d", got, pos)
		}
	}
	msgs, cp := batch(10, 12)
	if _, err := p.ProcessCheckpoint(f.ctx, msgs, cp); err != nil {
		f.t.Fatal(err)
	}
	want(12)
	// 13..18 in batches of 3: 14 fails, so neither its batch nor the next
	// may move the checkpoint past 13.
	msgs, cp = batch(13, 18)
	res, err := p.ProcessCheckpoint(f.ctx, msgs, cp)
	if err != nil {
		f.t.Fatal(err)
	}
	wantOutcomes(f.t, res, txinbox.Processed, txinbox.Retry, txinbox.Processed, txinbox.Processed, txinbox.Processed, txinbox.Processed)
	want(13)
	// A lower position never moves it back.
	msgs, cp = batch(5, 5)
	if _, err := p.ProcessCheckpoint(f.ctx, msgs, cp); err != nil {
		f.t.Fatal(err)
	}
	want(13)
	if _, err := p.ProcessCheckpoint(f.ctx, msgs, txinbox.Checkpoint{}); err == nil {
		f.t.Error("ProcessCheckpoint with no positions succeeded")
	}
}

func testPurge[TTx any](f *fixture[TTx]) {
	pu, ok := f.d.(store.Purger)
	if !ok {
		f.t.Skip(f.h.Name + " has no purger")
	}
	now := time.Now()
	p := f.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
		if m.ID == "old-failing" {
			return errBoom
		}
		return nil
	})
	var msgs []*txinbox.Message
	for i := range 5 {
		m := msg(fmt.Sprint("old-", i), "x")
		m.ReceivedAt = now.Add(-40 * 24 * time.Hour)
		msgs = append(msgs, m)
	}
	msgs = append(msgs, msg("new-1", "x"), msg("new-2", "x"))
	f.process(p, msgs...)
	before := now.Add(-30 * 24 * time.Hour)
	dry, err := pu.PurgeBatch(f.ctx, store.PurgeRequest{Before: before, DryRun: true})
	if err != nil || dry.Inbox != 5 {
		f.t.Fatalf("dry run = %+v, %v; want 5 inbox rows", dry, err)
	}
	if s := f.stats(); s.Inbox != 7 {
		f.t.Fatalf("dry run deleted rows: %+v", s)
	}
	var deleted int64
	for round := 0; ; round++ {
		res, err := pu.PurgeBatch(f.ctx, store.PurgeRequest{Before: before, Limit: 2})
		if err != nil {
			f.t.Fatal(err)
		}
		if res.Inbox > 2 {
			f.t.Fatalf("batch of limit 2 deleted %d inbox rows", res.Inbox)
		}
		deleted += res.Inbox
		if res.Inbox == 0 || round > 10 {
			break
		}
	}
	if s := f.stats(); deleted != 5 || s.Inbox != 2 {
		f.t.Errorf("deleted %d, inbox now %+v; want 5 deleted, the 2 new rows kept", deleted, s)
	}
	// Past retention a redelivery is new again: the retention contract.
	wantOutcomes(f.t, f.process(p, msg("old-0", "x"), msg("new-1", "x")), txinbox.Processed, txinbox.Duplicate)
	if _, err := pu.PurgeBatch(f.ctx, store.PurgeRequest{Before: before}); err == nil {
		f.t.Error("PurgeBatch without a limit succeeded")
	}
	release, ok, err := pu.PurgeLock(f.ctx)
	if err != nil || !ok {
		f.t.Fatalf("PurgeLock = %v, %v", ok, err)
	}
	release()
}

func testInspectForgetDrop[TTx any](f *fixture[TTx]) {
	a := f.d.(store.Admin)
	p := f.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
		if m.ID == "dead" {
			return txinbox.Permanent(errBoom)
		}
		return nil
	})
	f.process(p, msg("inv-1", "A"), msg("dead", "D"))
	f.process(p, msg("inv-1", "B")) // drift
	in, err := a.Inspect(f.ctx, store.Key{Scope: scope, MessageID: "inv-1"})
	if err != nil || in.Inbox == nil || !bytes.Equal(in.Inbox.PayloadHash, hashOf("A")) || len(in.Drift) != 1 ||
		in.DeadLetter != nil || in.Attempts != nil || in.Inbox.ReceivedAt.IsZero() {
		f.t.Fatalf("Inspect(inv-1) = %+v, %v", in, err)
	}
	in, err = a.Inspect(f.ctx, store.Key{Scope: scope, MessageID: "dead"})
	if err != nil || in.Inbox != nil || in.DeadLetter == nil || in.Attempts == nil || in.Attempts.Attempts != 1 {
		f.t.Fatalf("Inspect(dead) = %+v, %v", in, err)
	}
	if in, err := a.Inspect(f.ctx, store.Key{Scope: scope, MessageID: "never"}); err != nil || in.Inbox != nil || in.DeadLetter != nil {
		f.t.Fatalf("Inspect(never) = %+v, %v", in, err)
	}
	// Forget re-admits: the next delivery runs again.
	who := store.AuditEntry{Actor: "ops", Reason: "partner lost INV-1, resend"}
	if ok, err := a.Forget(f.ctx, store.Key{Scope: scope, MessageID: "inv-1"}, who); !ok || err != nil {
		f.t.Fatalf("Forget = %v, %v", ok, err)
	}
	if ok, err := a.Forget(f.ctx, store.Key{Scope: scope, MessageID: "inv-1"}, who); ok || err != nil {
		f.t.Errorf("Forget of a forgotten key = %v, %v", ok, err)
	}
	wantOutcomes(f.t, f.process(p, msg("inv-1", "A")), txinbox.Processed)
	f.wantEffects(map[string]int{scope + "/inv-1": 2})
	// Drop keeps the message dead but hides it.
	id := in.DeadLetter.ID
	if ok, err := a.DropDeadLetter(f.ctx, id, who); !ok || err != nil {
		f.t.Fatalf("DropDeadLetter = %v, %v", ok, err)
	}
	if ok, _ := a.DropDeadLetter(f.ctx, id, who); ok {
		f.t.Error("dropped twice")
	}
	if dls, _ := a.ListDeadLetters(f.ctx, store.ListFilter{}); len(dls) != 0 {
		f.t.Errorf("dropped dead letter still listed: %+v", dls)
	}
	if dls, _ := a.ListDeadLetters(f.ctx, store.ListFilter{Dropped: true}); len(dls) != 1 || dls[0].DroppedAt.IsZero() {
		f.t.Errorf("ListDeadLetters(Dropped) = %+v", dls)
	}
	if dl, ok, err := a.GetDeadLetter(f.ctx, id); !ok || err != nil || dl.MessageID != "dead" || dl.DroppedAt.IsZero() {
		f.t.Errorf("GetDeadLetter = %+v, %v, %v", dl, ok, err)
	}
	if _, ok, err := a.GetDeadLetter(f.ctx, id+1000); ok || err != nil {
		f.t.Errorf("GetDeadLetter(missing) = %v, %v", ok, err)
	}
	wantOutcomes(f.t, f.process(p, msg("dead", "D")), txinbox.DeadLettered)
}

func testScopeStats[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
		if m.ID == "fails" {
			return errBoom
		}
		return nil
	})
	old := msg("old", "x")
	old.ReceivedAt = time.Now().Add(-40 * 24 * time.Hour)
	other := msg("o-1", "x")
	other.Scope = "billing"
	f.process(p, old, msg("new", "x"), msg("fails", "x"), other)
	f.process(p, msg("new", "y")) // drift
	stats, err := f.d.(store.Admin).ScopeStats(f.ctx, time.Now().Add(-30*24*time.Hour))
	if err != nil {
		f.t.Fatal(err)
	}
	if len(stats) != 2 || stats[0].Scope != "billing" || stats[1].Scope != scope {
		f.t.Fatalf("ScopeStats = %+v", stats)
	}
	b, e := stats[0], stats[1]
	if b.Inbox != 1 || b.Expired != 0 || b.Attempts != 0 {
		f.t.Errorf("billing = %+v", b)
	}
	if e.Inbox != 2 || e.Expired != 1 || e.Attempts != 1 || e.Drift != 1 || e.DeadLetters != 0 ||
		e.OldestInbox.After(time.Now().Add(-39*24*time.Hour)) {
		f.t.Errorf("%s = %+v", scope, e)
	}
}

// testScopeStatsDeadLetters: a dead-lettered message counts under
// DeadLetters only, not under Attempts too (its attempts row stays): a
// message is failing only while it is being retried. A dropped dead
// letter is neither: its redeliveries stay refused.
func testScopeStatsDeadLetters[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{MaxAttempts: 2}, func(m *txinbox.Message) error {
		if m.ID == "poison" || m.ID == "dropped" {
			return txinbox.Permanent(errBoom)
		}
		if m.ID != "ok" {
			return errBoom
		}
		return nil
	})
	wantOutcomes(f.t, f.process(p, msg("ok", "x"), msg("retried", "x"), msg("maxed", "x"), msg("poison", "x"), msg("dropped", "x")),
		txinbox.Processed, txinbox.Retry, txinbox.Retry, txinbox.DeadLettered, txinbox.DeadLettered)
	wantOutcomes(f.t, f.process(p, msg("maxed", "x")), txinbox.DeadLettered)
	a := f.d.(store.Admin)
	in, err := a.Inspect(f.ctx, store.Key{Scope: scope, MessageID: "dropped"})
	if err != nil || in.DeadLetter == nil {
		f.t.Fatalf("Inspect(dropped) = %+v, %v", in, err)
	}
	if ok, err := a.DropDeadLetter(f.ctx, in.DeadLetter.ID, store.AuditEntry{Actor: "ops", Reason: "test"}); !ok || err != nil {
		f.t.Fatalf("DropDeadLetter = %v, %v", ok, err)
	}
	stats, err := a.ScopeStats(f.ctx, time.Now().Add(-time.Hour))
	if err != nil || len(stats) != 1 {
		f.t.Fatalf("ScopeStats = %+v, %v", stats, err)
	}
	if s := stats[0]; s.Inbox != 1 || s.Attempts != 1 || s.DeadLetters != 2 {
		f.t.Errorf("ScopeStats = %+v, want Inbox 1, Attempts 1 (retried), DeadLetters 2 (maxed, poison; dropped is neither)", s)
	}
}

// testInboxGauges: the scrape figures count the rows, those received before
// the cutoff and the oldest, across scopes.
func testInboxGauges[TTx any](f *fixture[TTx]) {
	gr, ok := f.d.(store.GaugeReader)
	if !ok {
		f.t.Skip("the driver has no InboxGauges")
	}
	empty, err := gr.InboxGauges(f.ctx, time.Now())
	if err != nil || empty.Rows != 0 || empty.Expired != 0 || !empty.OldestReceived.IsZero() {
		f.t.Fatalf("InboxGauges of an empty inbox = %+v, %v", empty, err)
	}
	p := f.processor(txinbox.Config[TTx]{}, nil)
	oldest := time.Now().Add(-50 * 24 * time.Hour).UTC().Truncate(time.Millisecond)
	a, b := msg("a", "x"), msg("b", "x")
	a.ReceivedAt, b.ReceivedAt = oldest, oldest.Add(time.Hour)
	other := msg("c", "x")
	other.Scope = "billing"
	f.process(p, a, b, msg("d", "x"), other)
	g, err := gr.InboxGauges(f.ctx, time.Now().Add(-30*24*time.Hour))
	if err != nil {
		f.t.Fatal(err)
	}
	if g.Rows != 4 || g.RowsEstimated || g.Expired != 2 || !g.OldestReceived.Equal(oldest) {
		f.t.Errorf("InboxGauges = %+v, want 4 rows counted, 2 expired, oldest %s", g, oldest)
	}
}
