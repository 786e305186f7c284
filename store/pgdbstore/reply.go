package pgdbstore

import (
	"context"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
)

var (
	_ store.ReplyKeeper      = (*dbTx)(nil)
	_ store.InFlightLocker   = (*dbTx)(nil)
	_ store.ReplyLister      = (*Driver)(nil)
	_ store.DurabilityReader = (*Driver)(nil)
)

// TryLockKeys implements store.InFlightLocker with transaction advisory
// locks (pg_try_advisory_xact_lock, pgstore's statement): one round trip
// of its own, before the claim.
func (t *dbTx) TryLockKeys(ctx context.Context, keys []store.Key) ([]bool, error) {
	return pgcore.LockKeys(ctx, t.d.core, t.q, keys)
}

// SaveReplies implements store.ReplyKeeper: one statement, one round trip
// (pgstore's travels with the COMMIT; database/sql sends the COMMIT on
// its own).
func (t *dbTx) SaveReplies(ctx context.Context, rows []store.ReplyRow) error {
	_, err := t.q.Exec(ctx, t.d.q.SaveReplies, pgcore.SaveRepliesArgs(rows)...)
	return err
}

// Replies implements store.ReplyKeeper: one statement, a row per key.
func (t *dbTx) Replies(ctx context.Context, keys []store.Key) ([][]byte, error) {
	return pgcore.Replies(ctx, t.d.core, t.q, keys)
}

// ListReplies implements store.ReplyLister (pgstore's query).
func (d *Driver) ListReplies(ctx context.Context, scopePrefix string, limit int) ([]store.ReplyRecord, error) {
	return pgcore.ListReplies(ctx, d.core, scopePrefix, limit)
}

// Durability implements store.DurabilityReader as pgstore's does (the
// same query, in one transaction of the pool): fsync, full_page_writes,
// synchronous_commit (its effective value on a store connection),
// synchronous_standby_names, wal_writer_delay and the standbys of
// pg_stat_replication; how the standbys replicate is in Unread when the
// role may not see it.
func (d *Driver) Durability(ctx context.Context) (store.Durability, error) {
	return pgcore.ReadDurability(ctx, d.core)
}
