package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
)

var _ store.Purger = (*Driver)(nil)

// PurgeBatch deletes one bounded batch of expired rows per table in its own
// transaction. Victims are chosen by ctid through the received_at index
// with FOR UPDATE SKIP LOCKED, so the purge never waits for the hot path
// (and the hot path, which only inserts new keys, never waits for it).
func (d *Driver) PurgeBatch(ctx context.Context, req store.PurgeRequest) (store.PurgeResult, error) {
	var res store.PurgeResult
	if req.DryRun {
		err := d.pool.QueryRow(ctx, d.t.Expand(`SELECT
			(SELECT count(*) FROM {inbox} WHERE received_at < $1 AND ($2 = '' OR scope = $2)),
			(SELECT count(*) FROM {attempts} WHERE last_failed_at < $1 AND ($2 = '' OR scope = $2)),
			(SELECT count(*) FROM {drift} WHERE detected_at < $1 AND ($2 = '' OR scope = $2))`),
			req.Before, req.Scope).Scan(&res.Inbox, &res.Attempts, &res.Drift)
		return res, err
	}
	if req.Limit <= 0 {
		return res, errors.New("pgstore: PurgeBatch: Limit must be positive")
	}
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		for _, p := range []struct {
			table, column string
			n             *int64
		}{{"{inbox}", "received_at", &res.Inbox}, {"{attempts}", "last_failed_at", &res.Attempts}, {"{drift}", "detected_at", &res.Drift}} {
			tag, err := tx.Exec(ctx, d.t.Expand(`DELETE FROM `+p.table+` WHERE ctid = ANY(ARRAY(
				SELECT ctid FROM `+p.table+` WHERE `+p.column+` < $1 AND ($2 = '' OR scope = $2)
				ORDER BY `+p.column+` LIMIT $3 FOR UPDATE SKIP LOCKED))`), req.Before, req.Scope, req.Limit)
			if err != nil {
				return err
			}
			*p.n = tag.RowsAffected()
		}
		return nil
	})
	return res, err
}

// PurgeLock holds a session advisory lock on a dedicated connection until
// release: one purger at a time across every process on this database.
func (d *Driver) PurgeLock(ctx context.Context) (func(), bool, error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	// The lock names the schema the tables are in (the search_path's when
	// Options.Schema is empty), so inboxes in other schemas purge freely.
	var ok bool
	var key int64
	if err := conn.QueryRow(ctx, `SELECT k, pg_try_advisory_lock(k) FROM (SELECT hashtextextended(
		'txinbox.purge.' || coalesce(nullif($1, ''), current_schema(), '') || '.' || $2, 0) AS k) s`,
		d.schema, d.t.Prefix).Scan(&key, &ok); err != nil {
		conn.Release()
		return nil, false, err
	}
	if !ok {
		conn.Release()
		return func() {}, false, nil
	}
	return func() {
		// A connection whose unlock failed is closed, which frees the lock.
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, key); err != nil {
			conn.Conn().Close(context.Background()) //nolint:errcheck // closing frees the lock
		}
		conn.Release()
	}, true, nil
}
