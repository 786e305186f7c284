package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
)

var _, _, _ = store.ReplyKeeper((*pgTx)(nil)), store.InFlightLocker((*pgTx)(nil)), store.ReplyLister((*Driver)(nil))

// TryLockKeys implements store.InFlightLocker with transaction advisory
// locks (pg_try_advisory_xact_lock), taken in the transaction's first
// round trip when it is its first statement.
func (t *pgTx) TryLockKeys(ctx context.Context, keys []store.Key) ([]bool, error) {
	var got []bool
	err := t.claimed(ctx, t.q.LockKeys, func(rs pgx.Rows) error {
		var err error
		got, err = pgcore.ScanLocks(t.d.core, rs, nil, keys)
		return err
	}, pgcore.LockKeysArgs(t.d.core, keys)...)
	return got, err
}

// SaveReplies implements store.ReplyKeeper: one statement, queued to
// travel with the COMMIT (the processor saves replies just before it).
func (t *pgTx) SaveReplies(ctx context.Context, rows []store.ReplyRow) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	t.queueMu.Lock()
	defer t.queueMu.Unlock()
	t.queue = append(t.queue, queued{sql: t.q.SaveReplies, args: pgcore.SaveRepliesArgs(rows)})
	return nil
}

// Replies implements store.ReplyKeeper: one statement, a row per key.
func (t *pgTx) Replies(ctx context.Context, keys []store.Key) ([][]byte, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return pgcore.Replies(ctx, t.d.core, onTx(t.tx), keys)
}

// ListReplies implements store.ReplyLister (pgsql.ReplyStatements).
func (d *Driver) ListReplies(ctx context.Context, scopePrefix string, limit int) ([]store.ReplyRecord, error) {
	return pgcore.ListReplies(ctx, d.core, scopePrefix, limit)
}
