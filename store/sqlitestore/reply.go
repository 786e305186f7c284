package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/txinbox/txinbox/store"
)

var _ store.ReplyKeeper = (*sqliteTx)(nil)

// SaveReplies implements store.ReplyKeeper, a statement per row (SQLite
// runs in process: a statement costs no round trip).
func (t *sqliteTx) SaveReplies(ctx context.Context, rows []store.ReplyRow) error {
	q := t.q.t.Expand(`UPDATE {inbox} SET reply = ? WHERE scope = ? AND message_id = ?`)
	for _, r := range rows {
		if _, err := t.tx.ExecContext(ctx, q, r.Reply, r.Scope, r.MessageID); err != nil {
			return err
		}
	}
	return nil
}

// Replies implements store.ReplyKeeper.
func (t *sqliteTx) Replies(ctx context.Context, keys []store.Key) ([][]byte, error) {
	q := t.q.t.Expand(`SELECT reply FROM {inbox} WHERE scope = ? AND message_id = ?`)
	out := make([][]byte, len(keys))
	for i, k := range keys {
		var reply []byte
		err := t.tx.QueryRowContext(ctx, q, k.Scope, k.MessageID).Scan(&reply)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		out[i] = reply
	}
	return out, nil
}

var _ store.ReplyLister = (*Driver)(nil)

// ListReplies implements store.ReplyLister, the newest rows first.
func (d *Driver) ListReplies(ctx context.Context, scopePrefix string, limit int) ([]store.ReplyRecord, error) {
	rows, err := d.db.QueryContext(ctx, d.t.Expand(`SELECT scope, message_id, source, received_at, reply FROM {inbox}
		WHERE substr(scope, 1, length(?1)) = ?1 AND reply IS NOT NULL ORDER BY received_at DESC LIMIT ?2`), scopePrefix, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ReplyRecord
	for rows.Next() {
		var r store.ReplyRecord
		var at string
		if err := rows.Scan(&r.Scope, &r.MessageID, &r.Source, &at, &r.Reply); err != nil {
			return nil, err
		}
		if r.ReceivedAt, err = parseTime(at); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
