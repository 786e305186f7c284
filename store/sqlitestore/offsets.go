package sqlitestore

import (
	"context"
	"time"

	"github.com/txinbox/txinbox/store"
)

var _ store.CheckpointAdvancer = (*sqliteTx)(nil)

// AdvanceCheckpoint implements store.CheckpointAdvancer. SQLite has one
// writer at a time: the UPDATE's write lock orders the transactions of a
// partition, and the second finds the position moved.
func (t *sqliteTx) AdvanceCheckpoint(ctx context.Context, cp store.Checkpoint, previous int64) (bool, error) {
	now := formatTime(time.Now())
	res, err := t.tx.ExecContext(ctx, t.q.t.Expand(`UPDATE {checkpoints} SET position = ?, updated_at = ?
WHERE scope = ? AND source = ? AND partition = ? AND position = ?`), cp.Position, now, cp.Scope, cp.Source, cp.PartitionText(), previous)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 || previous != -1 {
		return n == 1, err
	}
	res, err = t.tx.ExecContext(ctx, t.q.t.Expand(`INSERT INTO {checkpoints} (scope, source, partition, position, updated_at)
VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, source, partition) DO NOTHING`), cp.Scope, cp.Source, cp.PartitionText(), cp.Position, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
