package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestSelfTerminateOneConnection: a pool of one connection, and a
// handler that ends its own session in the redo a message at a time (a
// batch handler; offsets as the inbox): the ping after the loss must not
// wait for the lost connection that the redo's transaction still holds,
// or every such message is taken for an outage and fails its batch forever.
func TestSelfTerminateOneConnection(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"batch-handler", "offsets"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newFenv(t, testdb.Require(t), testdb.URL(), func(c *pgxpool.Config) { c.MaxConns = 1 })
			batch := ids("one", 3)
			handle := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				if err := insertEffect(ctx, tx, m); err != nil {
					return err
				}
				if m.ID == batch[1] {
					return terminateOwnBackend(ctx, tx)
				}
				return nil
			}
			p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 1, BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
				for _, m := range msgs {
					if err := handle(ctx, tx, m); err != nil {
						return err
					}
				}
				return nil
			}})
			want := each(batch, processedOnce)
			want[batch[1]] = rows{Attempts: 1, DeadLetters: 1}
			var err error
			if mode == "offsets" {
				want = map[string]rows{batch[0]: {Effects: 1}, batch[1]: {Attempts: 1, DeadLetters: 1}, batch[2]: {Effects: 1}}
				cp := txinbox.OffsetCheckpoint{Source: "failures", Partition: "0", Positions: []int64{0, 1, 2}, Saved: -1}
				_, _, err = p.ProcessOffsets(e.ctx, messages(batch), cp)
			} else {
				_, err = p.Process(e.ctx, messages(batch))
			}
			if err != nil {
				t.Fatalf("%v (the database answers: no outage)", err)
			}
			e.wantTables(want)
		})
	}
}
