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
