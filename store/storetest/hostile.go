package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// hostileHandlers are handlers that break the transaction they were given.
// Each runs as the third of five messages; the four innocent neighbours
// must be processed exactly once in the same Process call, the culprit must
// fail alone (Retry, then DeadLettered with a reason naming what it did) or,
// where the store is not harmed by what it did, be processed like any
// other; and never may an inbox row commit without its effect.
func hostileHandlers[TTx any](h Harness[TTx]) []struct {
	name       string
	reason     string // in the culprit's error when it fails
	maySucceed bool
	run        func(ctx context.Context, tx TTx, m *txinbox.Message) error
} {
	return []struct {
		name       string
		reason     string
		maySucceed bool
		run        func(ctx context.Context, tx TTx, m *txinbox.Message) error
	}{
		// PostgreSQL aborts the transaction (SQLSTATE 25P02); SQLite does not.
		{"SwallowsFailedStatement", "returned nil", true, func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			_ = h.Exec(ctx, tx, "INSERT INTO txinbox_no_such_table VALUES (1)")
			_ = h.InsertEffect(ctx, tx, m.Scope, m.ID)
			return nil
		}},
		// pgx closes the connection when the deadline expires mid-statement.
		{"OwnDeadlineSwallowed", "connection", true, func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			if err := h.InsertEffect(ctx, tx, m.Scope, m.ID); err != nil {
				return err
			}
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_ = h.Exec(short, tx, h.SlowQuery)
			return nil
		}},
		{"OwnDeadlineReturned", "deadline", false, func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			if err := h.InsertEffect(ctx, tx, m.Scope, m.ID); err != nil {
				return err
			}
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			return h.Exec(short, tx, h.SlowQuery)
		}},
		{"CallsCommit", "ommit", false, func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			if err := h.InsertEffect(ctx, tx, m.Scope, m.ID); err != nil {
				return err
			}
			_ = h.Commit(ctx, tx)
			return nil
		}},
		{"CallsRollback", "ollback", false, func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			if err := h.InsertEffect(ctx, tx, m.Scope, m.ID); err != nil {
				return err
			}
			_ = h.Rollback(ctx, tx)
			return nil
		}},
		{"RunsCOMMIT", "COMMIT", false, func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			if err := h.InsertEffect(ctx, tx, m.Scope, m.ID); err != nil {
				return err
			}
			_ = h.Exec(ctx, tx, "COMMIT")
			return nil
		}},
		{"RunsROLLBACK", "ROLLBACK", false, func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			if err := h.InsertEffect(ctx, tx, m.Scope, m.ID); err != nil {
				return err
			}
			_ = h.Exec(ctx, tx, "ROLLBACK")
			return nil
		}},
	}
}

func testHostileHandlers[TTx any](f *fixture[TTx]) {
	if f.h.Exec == nil || f.h.Commit == nil || f.h.Rollback == nil || f.h.SlowQuery == "" {
		f.t.Skip("the harness has no Exec, Commit, Rollback or SlowQuery for the hostile handlers")
	}
	for _, hc := range hostileHandlers(f.h) {
		for _, batch := range []bool{false, true} {
			name := hc.name
			if batch {
				name += "/BatchHandler"
			}
			f.t.Run(name, func(t *testing.T) {
				if batch && f.h.WritesAfterSQLEnd && strings.HasPrefix(hc.name, "Runs") {
					t.Skip("does not apply: the store lets a handler's writes after its own SQL " + hc.reason +
						" commit alone (Harness.WritesAfterSQLEnd)")
				}
				g := newFixture(t, f.h)
				g.hostile(hc.reason, hc.maySucceed, hc.run, batch)
			})
		}
	}
}

// hostile runs inv-1..inv-5 with run as inv-3's handler, twice with
// MaxAttempts 2, and checks the invariants.
func (f *fixture[TTx]) hostile(reason string, maySucceed bool, run func(context.Context, TTx, *txinbox.Message) error, batch bool) {
	const culprit = "inv-3"
	handle := func(ctx context.Context, tx TTx, m *txinbox.Message) error {
		if m.ID == culprit {
			return run(ctx, tx, m)
		}
		return f.h.InsertEffect(ctx, tx, m.Scope, m.ID)
	}
	cfg := txinbox.Config[TTx]{MaxAttempts: 2}
	if batch {
		cfg.BatchHandler = func(ctx context.Context, tx TTx, msgs []*txinbox.Message) error {
			for _, m := range msgs {
				if err := handle(ctx, tx, m); err != nil {
					return err
				}
			}
			return nil
		}
	} else {
		cfg.Handler = handle
	}
	p := f.processor(cfg, nil)
	msgs := func() []*txinbox.Message {
		var ms []*txinbox.Message
		for i := 1; i <= 5; i++ {
			ms = append(ms, msg(fmt.Sprint("inv-", i), fmt.Sprint("payload ", i)))
		}
		return ms
	}
	res, err := p.Process(f.ctx, msgs())
	if err != nil {
		f.t.Fatalf("Process: %v (the culprit must fail alone)", err)
	}
	want := map[string]int{}
	for i, r := range res {
		id := fmt.Sprint("inv-", i+1)
		if id == culprit {
			continue
		}
		want[scope+"/"+id] = 1
		if r.Outcome != txinbox.Processed {
			f.t.Errorf("innocent %s: %v (%v), want processed", id, r.Outcome, r.Err)
		}
	}
	c := res[2]
	switch {
	case c.Outcome == txinbox.Processed && maySucceed:
		want[scope+"/"+culprit] = 1
	case c.Outcome == txinbox.Retry:
		if c.Attempts != 1 || c.Err == nil || !strings.Contains(c.Err.Error(), reason) {
			f.t.Errorf("culprit: attempts %d, err %v; want 1 attempt and an error naming %q", c.Attempts, c.Err, reason)
		}
		if h := f.h.InboxPayloadHash(f.t, f.d, scope, culprit); h != nil {
			f.t.Errorf("the failed culprit has an inbox row")
		}
	default:
		f.t.Fatalf("culprit: %v (%v), want retry", c.Outcome, c.Err)
	}
	f.wantEffects(want)
	if c.Outcome == txinbox.Processed {
		return
	}
	// The redelivery: the innocent are duplicates, the culprit is
	// dead-lettered with its reason.
	res, err = p.Process(f.ctx, msgs())
	if err != nil {
		f.t.Fatalf("second Process: %v", err)
	}
	wantOutcomes(f.t, res, txinbox.Duplicate, txinbox.Duplicate, txinbox.DeadLettered, txinbox.Duplicate, txinbox.Duplicate)
	f.wantEffects(want)
	dls, err := f.d.(store.Admin).ListDeadLetters(f.ctx, store.ListFilter{Scope: scope})
	if err != nil || len(dls) != 1 {
		f.t.Fatalf("dead letters = %v, %v; want 1", dls, err)
	}
	if dls[0].MessageID != culprit || !strings.Contains(dls[0].LastError, reason) {
		f.t.Errorf("dead letter %q: last error %q, want one naming %q", dls[0].MessageID, dls[0].LastError, reason)
	}
	if s := f.stats(); s.Inbox != 4 {
		f.t.Errorf("inbox rows = %d, want 4", s.Inbox)
	}
}
