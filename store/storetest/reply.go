package storetest

import (
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// testReplies: with Config.Replies, a duplicate gets back the reply that
// the committed run of its handler left, in a later batch and within the
// same batch; a run that was rolled back leaves nothing.
func testReplies[TTx any](f *fixture[TTx]) {
	tx, err := f.d.Begin(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	_, keeps := tx.(store.ReplyKeeper)
	tx.Rollback(f.ctx) //nolint:errcheck
	if !keeps {
		// Without it, a batch with a reply to keep fails whole.
		p := f.processor(txinbox.Config[TTx]{Replies: true}, func(m *txinbox.Message) error { m.Reply = []byte("r"); return nil })
		if _, err := p.Process(f.ctx, []*txinbox.Message{msg("a", "A")}); err == nil {
			f.t.Errorf("%s has no store.ReplyKeeper, and a batch with a reply committed", f.h.Name)
		}
		return
	}
	runs := map[string]int{}
	p := f.processor(txinbox.Config[TTx]{Replies: true}, func(m *txinbox.Message) error {
		runs[m.ID]++
		m.Reply = []byte("answer of " + m.ID + " run " + string(rune('0'+runs[m.ID])))
		if m.ID == "fails-once" && runs[m.ID] == 1 {
			return errBoom
		}
		return nil
	})
	// b runs twice (redone under savepoints after c fails in the
	// optimistic pass); c fails, then succeeds in a later call.
	wantOutcomes(f.t, f.process(p, msg("b", "B"), msg("fails-once", "C"), msg("b", "B")),
		txinbox.Processed, txinbox.Retry, txinbox.Duplicate)
	res := f.process(p, msg("b", "B"), msg("fails-once", "C"), msg("fails-once", "C"))
	wantOutcomes(f.t, res, txinbox.Duplicate, txinbox.Processed, txinbox.Duplicate)
	if got, want := string(res[0].Reply), "answer of b run 2"; got != want {
		f.t.Errorf("duplicate's reply = %q, want %q (the run that committed)", got, want)
	}
	if got, want := string(res[2].Reply), "answer of fails-once run 2"; got != want {
		f.t.Errorf("in-batch repeat's reply = %q, want %q", got, want)
	}
	res = f.process(p, msg("fails-once", "C"), msg("b", "other payload"))
	wantOutcomes(f.t, res, txinbox.Duplicate, txinbox.Drift)
	if got, want := string(res[0].Reply), "answer of fails-once run 2"; got != want {
		f.t.Errorf("reply = %q, want %q", got, want)
	}
	if res[1].Reply != nil {
		f.t.Errorf("drift carries reply %q, want none", res[1].Reply)
	}
	if a, ok := f.d.(store.Admin); ok { // inspect shows the stored reply
		in, err := a.Inspect(f.ctx, store.Key{Scope: scope, MessageID: "b"})
		if err != nil || in.Inbox == nil || string(in.Inbox.Reply) != "answer of b run 2" {
			f.t.Errorf("Inspect(b) = %+v, %v; want the reply %q", in.Inbox, err, "answer of b run 2")
		}
	}
	if l, ok := f.d.(store.ReplyLister); ok {
		got, err := l.ListReplies(f.ctx, scope[:3], 10)
		if err != nil || len(got) != 2 || got[0].MessageID != "fails-once" || string(got[0].Reply) != "answer of fails-once run 2" ||
			got[1].MessageID != "b" || got[0].Source != "invoices" || got[0].ReceivedAt.IsZero() {
			f.t.Errorf("ListReplies = %+v, %v; want fails-once then b", got, err)
		}
		if got, err := l.ListReplies(f.ctx, "other", 10); err != nil || len(got) != 0 {
			f.t.Errorf("ListReplies(other) = %+v, %v; want none", got, err)
		}
	}
}

// testInFlightFailsFast: with Config.FailFastInFlight, a key that another
// transaction holds uncommitted is InFlight at once (the claim does not
// wait for it) and the rest of the batch commits; once the first commits,
// the key is a Duplicate. A store without store.InFlightLocker is
// skipped: its claim waits, as before.
func testInFlightFailsFast[TTx any](f *fixture[TTx]) {
	tx, err := f.d.Begin(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	_, locks := tx.(store.InFlightLocker)
	tx.Rollback(f.ctx) //nolint:errcheck
	if !locks {
		// Without it, the option changes nothing: deliveries one after
		// the other are processed, then duplicates.
		p := f.processor(txinbox.Config[TTx]{FailFastInFlight: true}, nil)
		wantOutcomes(f.t, f.process(p, msg("held", "H"), msg("held", "H")), txinbox.Processed, txinbox.Duplicate)
		wantOutcomes(f.t, f.process(p, msg("held", "H")), txinbox.Duplicate)
		return
	}
	entered, release := make(chan struct{}), make(chan struct{})
	slow := f.processor(txinbox.Config[TTx]{FailFastInFlight: true}, func(m *txinbox.Message) error {
		if m.ID == "held" {
			close(entered)
			<-release
		}
		return nil
	})
	fast := f.processor(txinbox.Config[TTx]{FailFastInFlight: true}, nil)
	done := make(chan []txinbox.Result, 1)
	go func() {
		res, err := slow.Process(f.ctx, []*txinbox.Message{msg("held", "H")})
		if err != nil {
			f.t.Errorf("slow Process: %v", err)
		}
		done <- res
	}()
	<-entered
	type answer struct {
		res []txinbox.Result
		err error
	}
	second := make(chan answer, 1)
	go func() {
		res, err := fast.Process(f.ctx, []*txinbox.Message{msg("before", "1"), msg("held", "H"), msg("after", "2")})
		second <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-second:
	case <-time.After(20 * time.Second):
		close(release) // let both end, then fail
		<-done
		a = <-second
		f.t.Fatalf("the second delivery waited for the first to commit (then: %v, %v)", outcomesOf(a.res), a.err)
	}
	res, err := a.res, a.err
	if err != nil {
		f.t.Fatal(err)
	}
	wantOutcomes(f.t, res, txinbox.Processed, txinbox.InFlight, txinbox.Processed)
	if res[1].Outcome.Ack() || res[1].RetryAfter <= 0 {
		f.t.Errorf("InFlight: Ack %v, RetryAfter %v; want no ack and a backoff", res[1].Outcome.Ack(), res[1].RetryAfter)
	}
	close(release)
	wantOutcomes(f.t, <-done, txinbox.Processed)
	wantOutcomes(f.t, f.process(fast, msg("held", "H")), txinbox.Duplicate)
	f.wantEffects(map[string]int{scope + "/before": 1, scope + "/held": 1, scope + "/after": 1})
	if s := f.stats(); s.Attempts != 0 || s.DeadLetters != 0 {
		f.t.Errorf("stats %+v: an in-flight delivery counted as a failure", s)
	}
}

func outcomesOf(res []txinbox.Result) []txinbox.Outcome {
	out := make([]txinbox.Outcome, len(res))
	for i, r := range res {
		out[i] = r.Outcome
	}
	return out
}
