package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
)

var (
	_ store.ReplyKeeper    = (*pgTx)(nil)
	_ store.InFlightLocker = (*pgTx)(nil)
)

// TryLockKeys implements store.InFlightLocker with transaction advisory
// locks (pg_try_advisory_xact_lock), taken in the transaction's first
// round trip when it is its first statement. A lock taken under a
// savepoint that is rolled back is released with it.
func (t *pgTx) TryLockKeys(ctx context.Context, keys []store.Key) ([]bool, error) {
	scopes, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		scopes[i], ids[i] = k.Scope, k.MessageID
	}
	got := make([]bool, 0, len(keys))
	scan := func(rs pgx.Rows) error {
		var ok bool
		_, err := pgx.ForEachRow(rs, []any{&ok}, func() error {
			got = append(got, ok)
			return nil
		})
		return err
	}
	args := []any{scopes, ids, t.q.tables.Inbox}
	var err error
	if t.tx != nil {
		var rs pgx.Rows
		if rs, err = t.tx.Query(ctx, t.q.LockKeys, args...); err == nil {
			err = scan(rs)
		}
	} else {
		b := t.firstBatch()
		if t.layout.partitioned {
			b.Queue(lockPeriodShared, t.layout.periodLock)
		}
		b.Queue(t.q.LockKeys, args...).Query(scan)
		err = t.sendFirst(ctx, b)
	}
	if err == nil && len(got) != len(keys) {
		err = fmt.Errorf("pgstore: %d locks answered for %d keys", len(got), len(keys))
	}
	return got, err
}

// SaveReplies implements store.ReplyKeeper: one statement for the batch.
func (t *pgTx) SaveReplies(ctx context.Context, rows []store.ReplyRow) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	scopes, ids, replies := make([]string, len(rows)), make([]string, len(rows)), make([][]byte, len(rows))
	for i, r := range rows {
		scopes[i], ids[i], replies[i] = r.Scope, r.MessageID, r.Reply
	}
	_, err := t.tx.Exec(ctx, t.q.SaveReplies, scopes, ids, replies)
	return err
}

// Replies implements store.ReplyKeeper.
func (t *pgTx) Replies(ctx context.Context, keys []store.Key) ([][]byte, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	scopes, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		scopes[i], ids[i] = k.Scope, k.MessageID
	}
	out := make([][]byte, len(keys))
	rs, err := t.tx.Query(ctx, t.q.Replies, scopes, ids)
	if err != nil {
		return nil, err
	}
	var ord int
	var reply []byte
	_, err = pgx.ForEachRow(rs, []any{&ord, &reply}, func() error {
		if ord < 1 || ord > len(out) {
			return fmt.Errorf("pgstore: replies returned ordinal %d for %d keys", ord, len(out))
		}
		out[ord-1] = append([]byte(nil), reply...)
		if reply == nil {
			out[ord-1] = nil
		}
		return nil
	})
	return out, err
}
