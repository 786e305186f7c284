package storetest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/txinbox/txinbox"
)

// offsetMsgs are messages of partition "3" of "invoices" at positions
// from..to, with their checkpoint as the caller saw it.
func offsetMsgs(from, to, saved int64) ([]*txinbox.Message, txinbox.OffsetCheckpoint) {
	cp := txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "invoices", Partition: 3}, Saved: saved}
	var msgs []*txinbox.Message
	for o := from; o <= to; o++ {
		msgs = append(msgs, msg(fmt.Sprint("invoices/3/", o), "x"))
		cp.Positions = append(cp.Positions, o)
	}
	return msgs, cp
}

func (f *fixture[TTx]) wantCheckpoint(p *txinbox.Processor[TTx], want int64) {
	f.t.Helper()
	got, err := p.Checkpoints(f.ctx, "invoices")
	if err != nil {
		f.t.Fatal(err)
	}
	if pos, ok := got[3]; !ok && want >= 0 || ok && pos != want {
		f.t.Errorf("checkpoint = %v, want partition 3 at %d", got, want)
	}
}

func effectsOf(scopeIDs ...string) map[string]int {
	out := map[string]int{}
	for _, id := range scopeIDs {
		out[scope+"/"+id] = 1
	}
	return out
}

// testOffsets: offsets as the inbox write no inbox row; the checkpoint
// moves with the effects, messages at or below it are duplicates, and a
// failure stops the prefix: the checkpoint never passes a Retry, and the
// messages after it wait.
func testOffsets[TTx any](f *fixture[TTx]) {
	fail := true
	p := f.processor(txinbox.Config[TTx]{MaxBatchSize: 3}, func(m *txinbox.Message) error {
		if m.ID == "invoices/3/14" && fail {
			return errBoom
		}
		return nil
	})
	msgs, cp := offsetMsgs(10, 12, -1)
	res, saved, err := p.ProcessOffsets(f.ctx, msgs, cp)
	if err != nil || saved != 12 {
		f.t.Fatalf("ProcessOffsets: saved %d, %v", saved, err)
	}
	wantOutcomes(f.t, res, txinbox.Processed, txinbox.Processed, txinbox.Processed)
	f.wantCheckpoint(p, 12)
	if st := f.stats(); st.Inbox != 0 {
		f.t.Errorf("%d inbox rows, want none", st.Inbox)
	}
	// 11..17: 11 and 12 are done; 14 fails, so 15..17 wait for it.
	msgs, cp = offsetMsgs(11, 17, saved)
	res, saved, err = p.ProcessOffsets(f.ctx, msgs, cp)
	if err != nil || saved != 13 {
		f.t.Fatalf("ProcessOffsets: saved %d, %v", saved, err)
	}
	wantOutcomes(f.t, res, txinbox.Duplicate, txinbox.Duplicate, txinbox.Processed, txinbox.Retry, txinbox.Retry, txinbox.Retry, txinbox.Retry)
	if res[3].Attempts != 1 || !errors.Is(res[3].Err, errBoom) {
		f.t.Errorf("the failed message: %+v", res[3])
	}
	f.wantCheckpoint(p, 13)
	fail = false
	msgs, cp = offsetMsgs(14, 17, saved)
	if res, saved, err = p.ProcessOffsets(f.ctx, msgs, cp); err != nil || saved != 17 {
		f.t.Fatalf("ProcessOffsets: saved %d, %v", saved, err)
	}
	wantOutcomes(f.t, res, txinbox.Processed, txinbox.Processed, txinbox.Processed, txinbox.Processed)
	f.wantEffects(effectsOf("invoices/3/10", "invoices/3/11", "invoices/3/12", "invoices/3/13", "invoices/3/14",
		"invoices/3/15", "invoices/3/16", "invoices/3/17"))
	if _, _, err := p.ProcessOffsets(f.ctx, msgs[1:], txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Positions: []int64{3, 2, 1}}}); err == nil {
		f.t.Error("ProcessOffsets with positions not ascending succeeded")
	}
}

// testOffsetsDeadLetter: a message that exhausts its attempts is
// dead-lettered and the checkpoint moves past it, so the messages after it
// run in the same call and a restart does not run it again.
func testOffsetsDeadLetter[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{MaxBatchSize: 10, MaxAttempts: 1}, func(m *txinbox.Message) error {
		if m.ID == "invoices/3/2" {
			return errBoom
		}
		return nil
	})
	msgs, cp := offsetMsgs(0, 4, -1)
	res, saved, err := p.ProcessOffsets(f.ctx, msgs, cp)
	if err != nil || saved != 4 {
		f.t.Fatalf("ProcessOffsets: saved %d, %v", saved, err)
	}
	wantOutcomes(f.t, res, txinbox.Processed, txinbox.Processed, txinbox.DeadLettered, txinbox.Processed, txinbox.Processed)
	f.wantCheckpoint(p, 4)
	if st := f.stats(); st.DeadLetters != 1 || st.Inbox != 0 {
		f.t.Errorf("stats %+v, want 1 dead letter and no inbox row", st)
	}
	f.wantEffects(effectsOf("invoices/3/0", "invoices/3/1", "invoices/3/3", "invoices/3/4"))
}

// testOffsetsFenced: a consumer whose checkpoint is stale (another
// consumer processed the partition since: a zombie after a rebalance)
// commits nothing; of two consumers running the same records at once,
// exactly one commits.
func testOffsetsFenced[TTx any](f *fixture[TTx]) {
	p := f.processor(txinbox.Config[TTx]{MaxBatchSize: 50}, nil)
	msgs, cp := offsetMsgs(0, 9, -1)
	if _, _, err := p.ProcessOffsets(f.ctx, msgs, cp); err != nil {
		f.t.Fatal(err)
	}
	msgs, cp = offsetMsgs(5, 14, 4) // the checkpoint is at 9, not 4
	res, saved, err := p.ProcessOffsets(f.ctx, msgs, cp)
	if !errors.Is(err, txinbox.ErrCheckpointMoved) || saved != 4 || res[0].Outcome != 0 {
		f.t.Errorf("with a stale checkpoint: saved %d, %v, %+v; want ErrCheckpointMoved and nothing done", saved, err, res[0])
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			msgs, cp := offsetMsgs(10, 59, 9)
			_, _, errs[i] = p.ProcessOffsets(f.ctx, msgs, cp)
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, txinbox.ErrCheckpointMoved):
			f.t.Errorf("concurrent ProcessOffsets: %v", err)
		}
	}
	if ok != 1 {
		f.t.Errorf("%d of 8 concurrent consumers of one partition committed, want 1", ok)
	}
	f.wantCheckpoint(p, 59)
	want := map[string]int{}
	for o := range 60 {
		want[fmt.Sprintf("%s/invoices/3/%d", scope, o)] = 1
	}
	f.wantEffects(want)
}
