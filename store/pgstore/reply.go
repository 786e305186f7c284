package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

var _, _, _ = store.ReplyKeeper((*pgTx)(nil)), store.InFlightLocker((*pgTx)(nil)), store.ReplyLister((*Driver)(nil))

// TryLockKeys implements store.InFlightLocker with transaction advisory
// locks (pg_try_advisory_xact_lock), taken in the transaction's first
// round trip when it is its first statement.
func (t *pgTx) TryLockKeys(ctx context.Context, keys []store.Key) ([]bool, error) {
	scopes, ids := pgsql.KeyColumns(keys)
	got := make([]bool, 0, len(keys))
	var ok bool
	err := t.claimed(ctx, t.q.LockKeys, func(rs pgx.Rows) error {
		_, err := pgx.ForEachRow(rs, []any{&ok}, func() error { got = append(got, ok); return nil })
		return err
	}, scopes, ids, t.d.t.Inbox)
	if err == nil && len(got) != len(keys) {
		err = fmt.Errorf("pgstore: %d locks answered for %d keys", len(got), len(keys))
	}
	return got, err
}

// SaveReplies implements store.ReplyKeeper: one statement, queued to
// travel with the COMMIT (the processor saves replies just before it).
func (t *pgTx) SaveReplies(ctx context.Context, rows []store.ReplyRow) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	scopes, ids, replies := make([]string, len(rows)), make([]string, len(rows)), make([][]byte, len(rows))
	for i, r := range rows {
		scopes[i], ids[i], replies[i] = r.Scope, r.MessageID, r.Reply
	}
	t.queueMu.Lock()
	defer t.queueMu.Unlock()
	t.queue = append(t.queue, queued{sql: t.q.SaveReplies, args: []any{scopes, ids, replies}})
	return nil
}

// Replies implements store.ReplyKeeper: one statement, one array.
func (t *pgTx) Replies(ctx context.Context, keys []store.Key) ([][]byte, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	scopes, ids := pgsql.KeyColumns(keys)
	var out [][]byte
	err := t.tx.QueryRow(ctx, t.q.Replies, scopes, ids).Scan(&out) // one per key: a LEFT JOIN
	return out, err
}

// ListReplies implements store.ReplyLister (pgsql.ReplyStatements).
func (d *Driver) ListReplies(ctx context.Context, scopePrefix string, limit int) ([]store.ReplyRecord, error) {
	rows, _ := d.pool.Query(ctx, d.q.ListReplies, scopePrefix, limit)
	return pgx.CollectRows(rows, pgx.RowToStructByPos[store.ReplyRecord])
}
