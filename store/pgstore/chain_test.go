package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestHandlerRollbackAndChain: a handler that ends the batch transaction
// with ROLLBACK AND CHAIN (which leaves another transaction open, so the
// connection looks fine) must not make the batch look committed: its
// message fails alone, the others commit once, and what it ran after the
// ROLLBACK is not committed; with a handler, a batch handler and offsets
// as the inbox.
func TestHandlerRollbackAndChain(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"handler", "batch-handler", "offsets"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
			batch := ids("chain", 4)
			handle := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				if m.ID == batch[1] {
					if _, err := tx.Exec(ctx, "ROLLBACK AND CHAIN"); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, "INSERT INTO effects VALUES ('s', 'stray')")
					return err
				}
				return insertEffect(ctx, tx, m)
			}
			cfg := txinbox.Config[pgx.Tx]{MaxAttempts: 1, Handler: handle}
			if mode == "batch-handler" {
				cfg.Handler, cfg.BatchHandler = nil, perMessage(handle)
			}
			p := e.processor(nil, cfg)
			want := each(batch, processedOnce)
			if mode == "offsets" {
				want = each(batch, rows{Effects: 1})
			}
			res, _, err := processIn(e, p, mode, batch)
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			wantOneDeadLettered(t, batch, res, 1)
			want[batch[1]] = rows{Attempts: 1, DeadLetters: 1}
			e.wantTables(want)
		})
	}
}
