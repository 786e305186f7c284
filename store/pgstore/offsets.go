package pgstore

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
	"github.com/txinbox/txinbox/store/schema"
)

var _ store.CheckpointAdvancer = (*pgTx)(nil)

// advanceSQL moves a partition's checkpoint from $5 (-1: none) to $4, and
// returns 1 when it did, 0 when the saved checkpoint is elsewhere. The
// UPDATE locks the row: a concurrent transaction of the partition waits,
// then (READ COMMITTED re-checks the WHERE on the committed row) finds the
// position moved and matches nothing. Two first checkpoints conflict on
// the primary key: the second waits, then does nothing. The guard CTE
// arms the commit guard, as the claim does: this is the first statement
// of a batch that writes no inbox row.
func advanceSQL(t schema.Tables) string {
	return t.Expand(pgsql.GuardCTE + `,
up AS (UPDATE {checkpoints} SET position = $4, updated_at = now()
       WHERE scope = $1 AND source = $2 AND partition = $3 AND position = $5::bigint
       RETURNING 1),
ins AS (INSERT INTO {checkpoints} (scope, source, partition, position, updated_at)
        SELECT $1, $2, $3, $4, now() WHERE $5::bigint = -1
        ON CONFLICT (scope, source, partition) DO NOTHING
        RETURNING 1)
SELECT (SELECT count(*) FROM up) + (SELECT count(*) FROM ins)`)
}

// advanceMoved names the failure of advanceGuardedSQL.
const advanceMoved = "txinbox: checkpoint moved"

// advanceGuardedSQL is advanceSQL failing (invalid input syntax for type
// integer, naming advanceMoved) when the checkpoint is not where the
// caller saw it: statements sent after it in the same round trip, and the
// COMMIT, are then skipped by the server.
func advanceGuardedSQL(t schema.Tables) string {
	s := advanceSQL(t)
	i := strings.LastIndex(s, "SELECT (SELECT count(*) FROM up)")
	return s[:i] + "SELECT (CASE (SELECT count(*) FROM up) + (SELECT count(*) FROM ins) WHEN 1 THEN '1' ELSE '" +
		advanceMoved + "' END)::int"
}

// movedError maps the failure of advanceGuardedSQL in err to
// store.ErrCheckpointMoved.
func movedError(err error) error {
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "22P02" && strings.Contains(pe.Message, advanceMoved) {
		return store.ErrCheckpointMoved
	}
	return err
}

var _ store.DeferredAdvancer = (*pgTx)(nil)

// DeferAdvance implements store.DeferredAdvancer: the transaction's first
// round trip (firstBatch) carries the guarded move.
func (t *pgTx) DeferAdvance(cp store.Checkpoint, previous int64) {
	if t.tx == nil {
		t.advance = append(checkpointArgs(&cp), previous)
	}
}

// AdvanceCheckpoint implements store.CheckpointAdvancer. As the first
// statement of the transaction it travels with the BEGIN, in one round
// trip.
func (t *pgTx) AdvanceCheckpoint(ctx context.Context, cp store.Checkpoint, previous int64) (bool, error) {
	var n int64
	args := append(checkpointArgs(&cp), previous)
	if t.tx != nil {
		err := t.tx.QueryRow(ctx, t.q.advance, args...).Scan(&n)
		return n == 1, err
	}
	b := t.firstBatch()
	b.Queue(t.q.advance, args...).QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
	err := t.sendFirst(ctx, b)
	return n == 1, err
}
