package pgstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
)

// terminateOwnBackend is a poison message's handler: it makes PostgreSQL
// end its own session, as a statement that crashes its backend would,
// while the database stays up.
func terminateOwnBackend(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
	return err
}

// TestHandlerTerminatingItsBackend: a message whose handler ends its own
// session every time is not taken for a database outage: the database
// answers a ping, so the others of its batch commit at once, exactly once,
// and it is run alone, blamed (an attempt counted) and dead-lettered after
// MaxAttempts (2) deliveries; with a per-message handler and with a batch
// handler.
func TestHandlerTerminatingItsBackend(t *testing.T) {
	t.Parallel()
	for _, batched := range []bool{false, true} {
		t.Run(map[bool]string{false: "handler", true: "batch-handler"}[batched], func(t *testing.T) {
			t.Parallel()
			e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
			batch := ids("self", 5)
			culprit := batch[2]
			handle := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				if err := insertEffect(ctx, tx, m); err != nil {
					return err
				}
				if m.ID == culprit {
					return terminateOwnBackend(ctx, tx)
				}
				return nil
			}
			cfg := txinbox.Config[pgx.Tx]{MaxAttempts: 2, Handler: handle}
			if batched {
				cfg.Handler, cfg.BatchHandler = nil, func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
					for _, m := range msgs {
						if err := handle(ctx, tx, m); err != nil {
							return err
						}
					}
					return nil
				}
			}
			p := e.processor(nil, cfg)
			res, err := p.Process(e.ctx, messages(batch))
			if err != nil {
				t.Fatalf("Process: %v (the database answers: no outage)", err)
			}
			for i, r := range res {
				want := txinbox.Processed
				if batch[i] == culprit {
					want = txinbox.Retry
				}
				if r.Outcome != want {
					t.Errorf("%s: %v (%v), want %v", batch[i], r.Outcome, r.Err, want)
				}
			}
			if res[2].Attempts != 1 {
				t.Errorf("the culprit's attempts = %d, want 1", res[2].Attempts)
			}
			res, err = p.Process(e.ctx, messages([]string{culprit}))
			if err != nil || res[0].Outcome != txinbox.DeadLettered {
				t.Fatalf("the culprit's second delivery: %v, %v; want dead-lettered", res, err)
			}
			want := each(batch, processedOnce)
			want[culprit] = rows{Attempts: 2, DeadLetters: 1}
			e.wantTables(want)
		})
	}
}

// TestOffsetsHandlerTerminatingItsBackend: the same poison with offsets as
// the inbox: the messages before it commit with the checkpoint, it is
// blamed and dead-lettered after MaxAttempts (2), the checkpoint moves
// past it, and the messages after it are processed, each once.
func TestOffsetsHandlerTerminatingItsBackend(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
	batch := ids("off", 5)
	p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 2, Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		if err := insertEffect(ctx, tx, m); err != nil {
			return err
		}
		if m.ID == batch[2] {
			return terminateOwnBackend(ctx, tx)
		}
		return nil
	}})
	saved, outcomes := int64(-1), map[string][]txinbox.Outcome{}
	for round := 0; saved < 4; round++ {
		if round == 5 {
			t.Fatalf("after 5 deliveries the checkpoint is at %d, want 4 (outcomes %v)", saved, outcomes)
		}
		var msgs []*txinbox.Message
		cp := txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "failures", Partition: 0}, Saved: saved}
		for i := saved + 1; i < 5; i++ {
			msgs = append(msgs, messages(batch[i : i+1])[0])
			cp.Positions = append(cp.Positions, i)
		}
		res, next, err := p.ProcessOffsets(e.ctx, msgs, cp)
		if err != nil {
			t.Fatalf("ProcessOffsets from %d: %v (the database answers: no outage)", saved+1, err)
		}
		for i, r := range res {
			outcomes[msgs[i].ID] = append(outcomes[msgs[i].ID], r.Outcome)
		}
		saved = next
	}
	for _, id := range batch {
		switch got := outcomes[id]; {
		case id == batch[2] && (!slices.Contains(got, txinbox.DeadLettered) || slices.Contains(got, txinbox.Processed)):
			t.Errorf("the culprit's outcomes %v, want dead-lettered, never processed", got)
		case id != batch[2] && !slices.Contains(got, txinbox.Processed):
			t.Errorf("%s: outcomes %v, want processed", id, got)
		}
	}
	var effects []string
	rows, err := e.check.Query(e.ctx, "SELECT message_id FROM "+e.schema+".effects ORDER BY message_id")
	if err == nil {
		effects, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if want := []string{batch[0], batch[1], batch[3], batch[4]}; err != nil || !slices.Equal(effects, want) {
		t.Errorf("effects %v (%v), want %v each once", effects, err, want)
	}
}
