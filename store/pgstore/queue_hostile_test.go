package pgstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

const queueEffect = "INSERT INTO effects (scope, message_id) VALUES ($1, $2)"

// queueCase is a per-message handler that queues its effect and then
// misbehaves for the culprit (batch[2]) as bad says.
type queueCase struct {
	name string
	bad  func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error
	// want is the culprit's outcome with MaxAttempts 1; its effect never
	// commits.
	want txinbox.Outcome
	// errHas is what the culprit's error must say.
	errHas string
}

// TestQueueHostile: a handler that queues its effect and then fails in
// some way: the others of its batch commit once, the culprit's queued
// statements never run, and its error says what failed.
func TestQueueHostile(t *testing.T) {
	t.Parallel()
	X := txinbox.DeadLettered
	for _, c := range []queueCase{
		{"returns-error", func(context.Context, pgx.Tx, *txinbox.Message) error { return errors.New("boom") }, X, "boom"},
		{"panics", func(context.Context, pgx.Tx, *txinbox.Message) error { panic("kaboom") }, X, "kaboom"},
		{"syntax-error", func(_ context.Context, tx pgx.Tx, _ *txinbox.Message) error {
			return pgstore.Queue(tx, "INSERT INTO effects VALUS ('x', 'y')")
		}, X, "VALUS"},
		{"unencodable-argument", func(_ context.Context, tx pgx.Tx, _ *txinbox.Message) error {
			return pgstore.Queue(tx, "SELECT $1::int", make(chan int))
		}, X, "SELECT $1::int"},
		{"queues-rollback", func(_ context.Context, tx pgx.Tx, _ *txinbox.Message) error {
			return pgstore.Queue(tx, "ROLLBACK")
		}, X, "ROLLBACK"},
		{"queues-rollback-then-more", func(_ context.Context, tx pgx.Tx, _ *txinbox.Message) error {
			if err := pgstore.Queue(tx, "ROLLBACK"); err != nil {
				return err
			}
			return pgstore.Queue(tx, queueEffect, "s", "stray")
		}, X, "ROLLBACK"},
		{"queues-rollback-and-chain", func(_ context.Context, tx pgx.Tx, _ *txinbox.Message) error {
			if err := pgstore.Queue(tx, "ROLLBACK AND CHAIN"); err != nil {
				return err
			}
			return pgstore.Queue(tx, queueEffect, "s", "stray")
		}, X, "ROLLBACK AND CHAIN"},
		{"queues-commit", func(_ context.Context, tx pgx.Tx, _ *txinbox.Message) error {
			return pgstore.Queue(tx, "COMMIT")
		}, X, "COMMIT"},
		{"unique-violation", func(_ context.Context, tx pgx.Tx, _ *txinbox.Message) error {
			return pgstore.Queue(tx, "INSERT INTO uniq VALUES (1), (1)")
		}, X, "uniq_pkey"},
		{"deferred-violation-at-commit", func(_ context.Context, tx pgx.Tx, _ *txinbox.Message) error {
			return pgstore.Queue(tx, "INSERT INTO child VALUES (-1)")
		}, X, "child_parent_fkey"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
			if _, err := e.check.Exec(e.ctx, "SET search_path = "+e.schema+`;
				CREATE TABLE uniq (k int PRIMARY KEY);
				CREATE TABLE parent (id int PRIMARY KEY);
				CREATE TABLE child (parent int REFERENCES parent DEFERRABLE INITIALLY DEFERRED)`); err != nil {
				t.Fatal(err)
			}
			batch := ids(c.name, 5)
			p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 1, Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				if err := pgstore.Queue(tx, queueEffect, m.Scope, m.ID); err != nil {
					return err
				}
				if m.ID == batch[2] {
					return c.bad(ctx, tx, m)
				}
				return nil
			}})
			res, err := p.Process(e.ctx, messages(batch))
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			for i, r := range res {
				want := txinbox.Processed
				if i == 2 {
					want = c.want
					if r.Err == nil || !strings.Contains(r.Err.Error(), c.errHas) {
						t.Errorf("the culprit's error %v, want it to say %q", r.Err, c.errHas)
					}
				}
				if r.Outcome != want {
					t.Errorf("%s: %v (%v), want %v", batch[i], r.Outcome, r.Err, want)
				}
			}
			want := each(batch, processedOnce)
			want[batch[2]] = rows{Attempts: 1, DeadLetters: 1}
			e.wantTables(want)
		})
	}
}

// TestQueueKillsBackend: a queued statement that ends its own session
// (sent with the COMMIT) is no outage: the others commit once, the
// culprit is run alone and blamed, dead-lettered after MaxAttempts (1);
// with a handler, a batch handler and offsets as the inbox.
func TestQueueKillsBackend(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"handler", "batch-handler", "offsets"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
			batch := ids("qkill", 4)
			handle := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				if err := pgstore.Queue(tx, queueEffect, m.Scope, m.ID); err != nil {
					return err
				}
				if m.ID == batch[1] {
					return pgstore.Queue(tx, "SELECT pg_terminate_backend(pg_backend_pid())")
				}
				return nil
			}
			cfg := txinbox.Config[pgx.Tx]{MaxAttempts: 1, Handler: handle}
			if mode == "batch-handler" {
				cfg.Handler, cfg.BatchHandler = nil, perMessage(handle)
			}
			p := e.processor(nil, cfg)
			res, saved, err := processIn(e, p, mode, batch)
			if mode == "offsets" && err == nil && saved != 3 {
				t.Errorf("offsets saved at %d, want 3", saved)
			}
			if err != nil {
				t.Fatalf("Process: %v (the database answers: no outage)", err)
			}
			wantOneDeadLettered(t, batch, res, 1)
			want := each(batch, processedOnce)
			want[batch[1]] = rows{Attempts: 1, DeadLetters: 1}
			if mode == "offsets" {
				want = map[string]rows{batch[1]: {Attempts: 1, DeadLetters: 1}}
				for _, id := range []string{batch[0], batch[2], batch[3]} {
					want[id] = rows{Effects: 1}
				}
			}
			e.wantTables(want)
		})
	}
}

// TestQueueDependsOnDirect: a queued statement that needs a row its own
// handler wrote directly (a foreign key, checked at once) finds it: direct
// statements run first.
func TestQueueDependsOnDirect(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
	if _, err := e.check.Exec(e.ctx, "SET search_path = "+e.schema+`;
		CREATE TABLE parent (id text PRIMARY KEY);
		CREATE TABLE child (parent text NOT NULL REFERENCES parent)`); err != nil {
		t.Fatal(err)
	}
	batch := ids("dep", 5)
	p := e.processor(nil, txinbox.Config[pgx.Tx]{Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		if err := pgstore.Queue(tx, "INSERT INTO child VALUES ($1)", m.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO parent VALUES ($1)", m.ID); err != nil {
			return err
		}
		return insertEffect(ctx, tx, m)
	}})
	res, err := p.Process(e.ctx, messages(batch))
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, res, txinbox.Processed)
	if n := count(t, e.d, "SELECT count(*) FROM "+e.schema+".child"); n != 5 {
		t.Errorf("%d child rows, want 5", n)
	}
}

// TestQueueMany: 10,000 queued statements in one batch, and one argument
// of 16 MB, commit once each.
func TestQueueMany(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
	if _, err := e.check.Exec(e.ctx, "CREATE TABLE "+e.schema+".big (v text)"); err != nil {
		t.Fatal(err)
	}
	batch := ids("many", 100)
	huge := strings.Repeat("x", 16<<20)
	p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxBatchSize: 100, BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		for _, m := range msgs {
			for i := range 100 {
				// Distinct texts: more than pgx's statement cache holds.
				if err := pgstore.Queue(tx, queueEffect+" -- "+m.ID+"/"+strconv.Itoa(i), m.Scope, m.ID); err != nil {
					return err
				}
			}
		}
		return pgstore.Queue(tx, "INSERT INTO big VALUES ($1)", huge)
	}})
	res, err := p.Process(e.ctx, messages(batch))
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, res, txinbox.Processed)
	want := each(batch, rows{Inbox: 1, Effects: 100})
	e.wantTables(want)
	if n := count(t, e.d, "SELECT count(*) FROM "+e.schema+".big WHERE length(v) = $1", len(huge)); n != 1 {
		t.Errorf("%d huge rows, want 1", n)
	}
}

// TestQueueContextCancelled: the context ends after the handlers queued
// and before the commit: nothing commits, Process fails (nothing to ack),
// and a redelivery takes effect once.
func TestQueueContextCancelled(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
	batch := ids("cancel", 3)
	var cancel context.CancelFunc
	p := e.processor(nil, txinbox.Config[pgx.Tx]{BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		for _, m := range msgs {
			if err := pgstore.Queue(tx, queueEffect, m.Scope, m.ID); err != nil {
				return err
			}
		}
		if cancel != nil {
			cancel()
		}
		return nil
	}})
	ctx, c := context.WithCancel(e.ctx)
	cancel = c
	res, err := p.Process(ctx, messages(batch))
	wantNotCommitted(t, res, err, len(batch))
	e.wantTables(nil)
	cancel = nil
	if res, err = p.Process(e.ctx, messages(batch)); err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, res, txinbox.Processed)
	e.wantTables(each(batch, processedOnce))
}

// TestQueueCheckpointStopsBeforeFailure: with a checkpoint, a queued
// statement that fails keeps the checkpoint before its message (a Retry):
// never past what was not committed.
func TestQueueCheckpointStopsBeforeFailure(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
	batch := ids("cpq", 4)
	p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 3, BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		for _, m := range msgs {
			sql := queueEffect
			if m.ID == batch[2] {
				sql = "INSERT INTO effects (scope, message_id) VALUES ($1, $2::int::text)"
			}
			if err := pgstore.Queue(tx, sql, m.Scope, m.ID); err != nil {
				return err
			}
		}
		return nil
	}})
	res, err := p.ProcessCheckpoint(e.ctx, messages(batch), txinbox.Checkpoint{Source: "k", Partition: 0, Positions: []int64{10, 11, 12, 13}})
	if err != nil {
		t.Fatal(err)
	}
	if res[2].Outcome != txinbox.Retry || res[3].Outcome != txinbox.Processed {
		t.Errorf("outcomes %v, want the culprit Retry, the others processed", res)
	}
	var qe *store.QueuedStatementError
	if !errors.As(res[2].Err, &qe) {
		t.Errorf("the culprit's error %v is no *store.QueuedStatementError", res[2].Err)
	}
	if cps, err := p.Checkpoints(e.ctx, "k"); err != nil || cps[0] != 11 {
		t.Errorf("checkpoints %v, %v; want partition 0 at 11 (before the Retry)", cps, err)
	}
}

// TestQueueRefusesOtherTx: Queue on a nil transaction is an error, no
// panic.
func TestQueueRefusesOtherTx(t *testing.T) {
	if err := pgstore.Queue(nil, "SELECT 1"); err == nil {
		t.Error("Queue(nil): no error")
	}
}

// TestQueuedStatementErrorNamesIt: the error of a failing queued statement
// names the statement (its place among the handler's and its text), for
// an error found when the statement is prepared (syntax) and when it runs.
func TestQueuedStatementErrorNamesIt(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"INSERT INTO effects VALUS ('x', 'y')", "SELECT 1/0"} {
		e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
		p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 1, Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			for _, sql := range []string{"SELECT 1", bad, "SELECT 2"} {
				if err := pgstore.Queue(tx, sql); err != nil {
					return err
				}
			}
			return nil
		}})
		res, err := p.Process(e.ctx, messages([]string{"m"}))
		if err != nil {
			t.Fatal(err)
		}
		var qe *store.QueuedStatementError
		if !errors.As(res[0].Err, &qe) || qe.Index != 1 || qe.SQL != bad || !strings.Contains(qe.Error(), bad) {
			t.Errorf("%s: error %v (%+v), want statement 1 named", bad, res[0].Err, qe)
		}
	}
}

// TestQueueConcurrent: a batch handler that queues from goroutines of its
// own (waiting for them before it returns): every statement commits,
// none lost to a race.
func TestQueueConcurrent(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
	batch := ids("conc", 50)
	p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxBatchSize: 50, BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		errs := make(chan error, len(msgs))
		for _, m := range msgs {
			go func() { errs <- pgstore.Queue(tx, queueEffect, m.Scope, m.ID) }()
		}
		for range msgs {
			if err := <-errs; err != nil {
				return err
			}
		}
		return nil
	}})
	res, err := p.Process(e.ctx, messages(batch))
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, res, txinbox.Processed)
	e.wantTables(each(batch, processedOnce))
}

// TestQueueRollbackOffsets: offsets as the inbox, a handler queues
// ROLLBACK and then its effect: nothing queued after the ROLLBACK
// commits, the others take effect once and the checkpoint passes the
// culprit, dead-lettered (MaxAttempts 1).
func TestQueueRollbackOffsets(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
	batch := ids("qrb", 4)
	p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 1, Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		if m.ID == batch[1] {
			if err := pgstore.Queue(tx, "ROLLBACK"); err != nil {
				return err
			}
		}
		return pgstore.Queue(tx, queueEffect, m.Scope, m.ID)
	}})
	cp := txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "failures", Partition: 0, Positions: []int64{0, 1, 2, 3}}, Saved: -1}
	res, saved, err := p.ProcessOffsets(e.ctx, messages(batch), cp)
	if err != nil || saved != 3 || res[1].Outcome != txinbox.DeadLettered {
		t.Fatalf("ProcessOffsets: %v, saved %d, %v; want the culprit dead-lettered, saved at 3", res, saved, err)
	}
	want := each(batch, rows{Effects: 1})
	want[batch[1]] = rows{Attempts: 1, DeadLetters: 1}
	e.wantTables(want)
}
