package pgstore

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

var _ store.CheckpointAdvancer = (*pgTx)(nil)

// movedError maps the failure of Statements.AdvanceGuarded in err to
// store.ErrCheckpointMoved.
func movedError(err error) error {
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "22P02" && strings.Contains(pe.Message, pgsql.AdvanceMoved) {
		return store.ErrCheckpointMoved
	}
	return err
}

var _ store.DeferredAdvancer = (*pgTx)(nil)

// DeferAdvance implements store.DeferredAdvancer: the transaction's first
// round trip (firstBatch) carries the guarded move.
func (t *pgTx) DeferAdvance(cp store.Checkpoint, previous int64) {
	if t.tx == nil {
		t.advance = append(pgcore.CheckpointArgs(&cp), previous)
	}
}

// AdvanceCheckpoint implements store.CheckpointAdvancer. As the first
// statement of the transaction it travels with the BEGIN, in one round
// trip.
func (t *pgTx) AdvanceCheckpoint(ctx context.Context, cp store.Checkpoint, previous int64) (bool, error) {
	var n int64
	args := append(pgcore.CheckpointArgs(&cp), previous)
	if t.tx != nil {
		err := t.tx.QueryRow(ctx, t.q.Advance, args...).Scan(&n)
		return n == 1, err
	}
	b := t.firstBatch()
	b.Queue(t.q.Advance, args...).QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
	err := t.sendFirst(ctx, b)
	return n == 1, err
}
