package pgcore

import (
	"context"
	"fmt"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// Replies, in-flight locks (pgsql.ReplyStatements) and the durability
// settings, for every PostgreSQL store.

// LockKeysArgs are the arguments of the in-flight locks' statement
// (pgsql.ReplyStatements.LockKeys) for keys.
func LockKeysArgs(c *Core, keys []store.Key) []any {
	scopes, ids := pgsql.KeyColumns(keys)
	return []any{scopes, ids, c.t.Inbox}
}

// ScanLocks reads the in-flight locks' answers into got, one per key; it
// closes the rows. An answer count that is not len(keys) is an error.
func ScanLocks(c *Core, rows Rows, err error, keys []store.Key) ([]bool, error) {
	got := make([]bool, 0, len(keys))
	var ok bool
	err = ForEach(rows, err, []any{&ok}, func() error { got = append(got, ok); return nil })
	if err == nil && len(got) != len(keys) {
		err = c.errf("%d locks answered for %d keys", len(got), len(keys))
	}
	return got, err
}

// LockKeys takes the in-flight lock of each key on q (a transaction),
// without waiting, and reports whether it got it (store.InFlightLocker).
func LockKeys(ctx context.Context, c *Core, q Querier, keys []store.Key) ([]bool, error) {
	rows, err := q.Query(ctx, c.q.LockKeys, LockKeysArgs(c, keys)...)
	return ScanLocks(c, rows, err, keys)
}

// SaveRepliesArgs are the arguments of pgsql.ReplyStatements.SaveReplies
// for rows.
func SaveRepliesArgs(rows []store.ReplyRow) []any {
	scopes, ids, replies := make([]string, len(rows)), make([]string, len(rows)), make([][]byte, len(rows))
	for i, r := range rows {
		scopes[i], ids[i], replies[i] = r.Scope, r.MessageID, r.Reply
	}
	return []any{scopes, ids, replies}
}

// Replies reads the stored reply of each key on q, aligned with keys (nil
// for none): store.ReplyKeeper's Replies.
func Replies(ctx context.Context, c *Core, q Querier, keys []store.Key) ([][]byte, error) {
	scopes, ids := pgsql.KeyColumns(keys)
	rows, err := q.Query(ctx, c.q.Replies, scopes, ids)
	out := make([][]byte, 0, len(keys))
	var r []byte
	err = ForEach(rows, err, []any{&r}, func() error {
		out = append(out, r)
		r = nil
		return nil
	})
	if err == nil && len(out) != len(keys) {
		err = c.errf("%d replies read for %d keys", len(out), len(keys))
	}
	return out, err
}

// ListReplies is store.ReplyLister's ListReplies on c's database.
func ListReplies(ctx context.Context, c *Core, scopePrefix string, limit int) ([]store.ReplyRecord, error) {
	var out []store.ReplyRecord
	var r store.ReplyRecord
	rows, err := c.db.Query(ctx, c.q.ListReplies, scopePrefix, limit)
	err = ForEach(rows, err, []any{&r.Scope, &r.MessageID, &r.Source, &r.ReceivedAt, &r.Reply}, func() error {
		out = append(out, r)
		r = store.ReplyRecord{}
		return nil
	})
	return out, err
}

// ReadDurability reads the durability settings on one of c's connections,
// in one transaction, and judges them (pgsql.DurabilitySettings.Judge):
// store.DurabilityReader's Durability.
func ReadDurability(ctx context.Context, c *Core) (store.Durability, error) {
	var p pgsql.DurabilitySettings
	err := c.db.InTx(ctx, func(q Querier) error {
		if _, err := QueryRow(ctx, q, pgsql.DurabilityQuery, nil, &p.Fsync, &p.FullPageWrites, &p.SyncCommit,
			&p.StandbyNames, &p.WalWriterDelay, &p.Role, &p.CanSeeStandbys); err != nil {
			return err
		}
		rows, err := q.Query(ctx, pgsql.StandbysQuery)
		var s pgsql.Standby
		return ForEach(rows, err, []any{&s.Name, &s.Addr, &s.SyncState}, func() error {
			p.Standbys = append(p.Standbys, s)
			return nil
		})
	})
	if err != nil {
		return store.Durability{}, fmt.Errorf("%s: reading the durability settings: %w", c.opts.Name, err)
	}
	return p.Judge(), nil
}
