package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

var _ store.Purger = (*Driver)(nil)

// PurgeBatch deletes one bounded batch of expired rows per table in its own
// transaction. Victims are chosen through the received_at index; a row
// that another transaction holds is skipped after at most 50 ms (see
// deleteBatch), so the purge never waits long for the hot path, and the
// hot path, which inserts new keys, never waits for the purge (except a
// claim of an expired key whose row the purge is deleting, for the rest of
// that batch).
//
// On a partitioned inbox, a batch without req.Scope first starts the next
// period if the current one is over (RotatePeriod) and drops the
// partitions of the periods that ended before req.Before
// (DropExpiredPartitions), counting their rows in Inbox, which may then
// exceed req.Limit; the row batch that follows removes only rows received
// before req.Before that live in newer partitions. A purge of one scope
// never drops partitions (they hold every scope): it deletes row by row.
func (d *Driver) PurgeBatch(ctx context.Context, req store.PurgeRequest) (store.PurgeResult, error) {
	var res store.PurgeResult
	l, err := d.layoutOf(ctx)
	if err != nil {
		return res, err
	}
	if req.DryRun {
		return d.purgeDryRun(ctx, req, l)
	}
	if req.Limit <= 0 {
		return res, errors.New("pgstore: PurgeBatch: Limit must be positive")
	}
	// The commit guard keeps a row per backend that ever claimed: those
	// of backends gone go (a few rows, one short statement).
	if _, err := d.pool.Exec(ctx, d.t.Expand(`DELETE FROM {tx_guard} g
WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = g.backend_pid)`)); err != nil {
		return res, fmt.Errorf("pgstore: purge of the commit guard: %w", err)
	}
	var dropped int64
	if l.partitioned && req.Scope == "" {
		if _, _, err := d.RotatePeriod(ctx, false); err != nil && !errors.Is(err, ErrPeriodSwitchBusy) {
			return res, err
		}
		if _, dropped, err = d.DropExpiredPartitions(ctx, req.Before); err != nil {
			return res, err
		}
	}
	res, err = d.deleteBatch(ctx, req, l)
	res.Inbox += dropped
	return res, err
}

// deleteBatch deletes at most req.Limit rows of each table in one
// transaction (pgsql.PurgeDeletes).
//
// The fast path is a plain DELETE: expired rows are almost never locked,
// and locking each row first (FOR UPDATE SKIP LOCKED) writes every heap
// tuple and WAL record twice, which cost a third of the purge's speed in
// the benchmark. The plain DELETE runs with a 50 ms lock_timeout; if it
// times out, the batch is redone with FOR UPDATE SKIP LOCKED, which skips
// what is locked. Either way the purge never waits long for anyone. The
// commit does not wait for the WAL flush (synchronous_commit off): a purge
// lost in a crash is redone by the next one, and no transaction depends on
// it.
func (d *Driver) deleteBatch(ctx context.Context, req store.PurgeRequest, l *layout) (store.PurgeResult, error) {
	res, err := d.deleteOnce(ctx, req, l, "")
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
		return d.deleteOnce(ctx, req, l, " FOR UPDATE SKIP LOCKED")
	}
	return res, err
}

func (d *Driver) deleteOnce(ctx context.Context, req store.PurgeRequest, l *layout, locking string) (store.PurgeResult, error) {
	var res store.PurgeResult
	deletes := pgsql.PurgeDeletes(l.partitioned, locking)
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+pgsql.PurgeLockTimeout+`'; SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		for _, p := range []struct {
			sql string
			n   *int64
		}{{deletes[0], &res.Inbox}, {deletes[1], &res.Attempts}, {deletes[2], &res.Drift}} {
			tag, err := tx.Exec(ctx, d.t.Expand(p.sql), req.Before, req.Scope, req.Limit)
			if err != nil {
				return err
			}
			*p.n = tag.RowsAffected()
		}
		return nil
	})
	return res, err
}

// purgeDryRun counts what a purge would remove: on a partitioned inbox,
// also the rows of the partitions it would drop.
func (d *Driver) purgeDryRun(ctx context.Context, req store.PurgeRequest, l *layout) (store.PurgeResult, error) {
	var res store.PurgeResult
	err := d.pool.QueryRow(ctx, d.expandP(pgsql.PurgeCount(l.partitioned)),
		req.Before, req.Scope).Scan(&res.Inbox, &res.Attempts, &res.Drift)
	if err != nil {
		return res, fmt.Errorf("pgstore: purge dry run: %w", err)
	}
	return res, nil
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
