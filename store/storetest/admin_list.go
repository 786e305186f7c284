package storetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// testListPagesAndFilters dead-letters messages of two sources and pages
// through them by key with the filters of the console.
func testListPagesAndFilters[TTx any](f *fixture[TTx]) {
	a := f.d.(store.Admin)
	p := f.processor(txinbox.Config[TTx]{}, func(*txinbox.Message) error { return txinbox.Permanent(errBoom) })
	var msgs []*txinbox.Message
	for i := range 7 {
		m := msg(fmt.Sprintf("dl-%d", i), "payload")
		if i%2 == 1 {
			m.Source = "orders"
		}
		msgs = append(msgs, m)
	}
	f.process(p, msgs...)
	var ids []string
	f2 := store.ListFilter{Scope: scope, Limit: 2, OmitPayload: true}
	for page := 0; page < 10; page++ {
		dls, err := a.ListDeadLetters(f.ctx, f2)
		if err != nil {
			f.t.Fatalf("ListDeadLetters(%+v): %v", f2, err)
		}
		for _, dl := range dls {
			if len(dl.Payload) != 0 || dl.Reason == "" {
				f.t.Errorf("OmitPayload listing returned %+v", dl)
			}
			ids = append(ids, dl.MessageID)
		}
		if len(dls) < f2.Limit {
			break
		}
		f2.Before = dls[len(dls)-1].ID
	}
	if fmt.Sprint(ids) != "[dl-6 dl-5 dl-4 dl-3 dl-2 dl-1 dl-0]" {
		f.t.Errorf("pages by key = %v, want every dead letter once, newest first", ids)
	}
	f.wantListed(store.ListFilter{Source: "orders"}, 3)
	f.wantListed(store.ListFilter{Source: "orders", Reason: "no such reason"}, 0)
	f.wantListed(store.ListFilter{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour)}, 7)
	f.wantListed(store.ListFilter{Until: time.Now().Add(-time.Hour)}, 0)
	dls, _ := a.ListDeadLetters(f.ctx, store.ListFilter{Limit: 1})
	f.wantListed(store.ListFilter{Reason: dls[0].Reason}, 7)
	if len(dls[0].Payload) == 0 {
		f.t.Error("a listing without OmitPayload has no payload")
	}
	f.wantTimeline(7)
}

func (f *fixture[TTx]) wantListed(lf store.ListFilter, n int) {
	f.t.Helper()
	dls, err := f.d.(store.Admin).ListDeadLetters(f.ctx, lf)
	if err != nil || len(dls) != n {
		f.t.Errorf("ListDeadLetters(%+v) = %d rows, %v; want %d", lf, len(dls), err, n)
	}
}

func (f *fixture[TTx]) wantTimeline(deadLettered int64) {
	f.t.Helper()
	tl, ok := f.d.(store.Timeline)
	if !ok {
		return
	}
	mcs, err := tl.OutcomesPerMinute(f.ctx, time.Now().Add(-time.Hour))
	if err != nil {
		f.t.Fatalf("OutcomesPerMinute: %v", err)
	}
	var n int64
	for _, mc := range mcs {
		n += mc.DeadLettered
		if mc.Minute.Second() != 0 || time.Since(mc.Minute) > time.Hour {
			f.t.Errorf("minute %v is not a minute of the last hour", mc.Minute)
		}
	}
	if n != deadLettered {
		f.t.Errorf("OutcomesPerMinute counts %d dead letters, want %d (%+v)", n, deadLettered, mcs)
	}
}

// testReplayDeadLetter replays dead letters the way the CLI and the
// console do: one without an id or a reason is refused, a real one is
// re-admitted and processed once by its next delivery. (The stale case
// needs an inbox row written behind the processor's back: see the
// console's tests.)
func testReplayDeadLetter[TTx any](f *fixture[TTx]) {
	a := f.d.(store.Admin)
	fail := true
	p := f.processor(txinbox.Config[TTx]{}, func(*txinbox.Message) error {
		if fail {
			return txinbox.Permanent(errBoom)
		}
		return nil
	})
	f.process(p, msg("inv-1", "A"), msg("", "no id"))
	dls, _ := a.ListDeadLetters(f.ctx, store.ListFilter{})
	who := store.AuditEntry{Actor: "ops", Reason: "partner fixed"}
	if len(dls) != 2 {
		f.t.Fatalf("dead letters = %d, want 2", len(dls))
	}
	noID, withID := dls[0], dls[1]
	if withID.MessageID == "" {
		noID, withID = withID, noID
	}
	if _, err := store.ReplayDeadLetter(f.ctx, a, noID.ID, who); !errors.Is(err, store.ErrReplayNoID) {
		f.t.Errorf("replay without a message id: %v, want ErrReplayNoID", err)
	}
	if _, err := store.ReplayDeadLetter(f.ctx, a, withID.ID, store.AuditEntry{Actor: "ops"}); err == nil {
		f.t.Error("a replay without a reason was accepted")
	}
	if _, err := store.ReplayDeadLetter(f.ctx, a, 1<<40, who); !errors.Is(err, store.ErrNoDeadLetter) {
		f.t.Errorf("replay of an unknown id: %v, want ErrNoDeadLetter", err)
	}
	if _, err := store.ReplayDeadLetter(f.ctx, a, withID.ID, who); err != nil {
		f.t.Fatalf("ReplayDeadLetter: %v", err)
	}
	fail = false
	wantOutcomes(f.t, f.process(p, msg("inv-1", "A")), txinbox.Processed)
	wantOutcomes(f.t, f.process(p, msg("inv-1", "A")), txinbox.Duplicate)
	f.wantEffects(map[string]int{scope + "/inv-1": 1}) // the failed attempt rolled back its effect
}
