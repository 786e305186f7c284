package pgcore

import (
	"context"
	"errors"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

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
func (c *Core) PurgeBatch(ctx context.Context, req store.PurgeRequest) (store.PurgeResult, error) {
	var res store.PurgeResult
	l, err := c.layoutOf(ctx)
	if err != nil {
		return res, err
	}
	if req.DryRun {
		return c.purgeDryRun(ctx, req, l)
	}
	if req.Limit <= 0 {
		return res, c.errf("PurgeBatch: Limit must be positive")
	}
	// The commit guard keeps a row per backend that ever claimed: those
	// of backends gone go (a few rows, one short statement).
	if _, err := c.db.Exec(ctx, c.t.Expand(`DELETE FROM {tx_guard} g
WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = g.backend_pid)`)); err != nil {
		return res, c.errf("purge of the commit guard: %w", err)
	}
	var dropped int64
	if l.Partitioned && req.Scope == "" {
		if _, _, err := c.RotatePeriod(ctx, false); err != nil && !errors.Is(err, ErrPeriodSwitchBusy) {
			return res, err
		}
		if _, dropped, err = c.DropExpiredPartitions(ctx, req.Before); err != nil {
			return res, err
		}
	}
	res, err = c.deleteBatch(ctx, req, l)
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
func (c *Core) deleteBatch(ctx context.Context, req store.PurgeRequest, l *Layout) (store.PurgeResult, error) {
	res, err := c.deleteOnce(ctx, req, l, "")
	if SQLState(err) == "55P03" { // lock_not_available
		return c.deleteOnce(ctx, req, l, " FOR UPDATE SKIP LOCKED")
	}
	return res, err
}

func (c *Core) deleteOnce(ctx context.Context, req store.PurgeRequest, l *Layout, locking string) (store.PurgeResult, error) {
	var res store.PurgeResult
	deletes := pgsql.PurgeDeletes(l.Partitioned, locking)
	err := c.db.InTx(ctx, func(tx Querier) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+pgsql.PurgeLockTimeout+`'; SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		for _, p := range []struct {
			sql string
			n   *int64
		}{{deletes[0], &res.Inbox}, {deletes[1], &res.Attempts}, {deletes[2], &res.Drift}} {
			n, err := tx.Exec(ctx, c.t.Expand(p.sql), req.Before, req.Scope, req.Limit)
			if err != nil {
				return err
			}
			*p.n = n
		}
		return nil
	})
	return res, err
}

// purgeDryRun counts what a purge would remove: on a partitioned inbox,
// also the rows of the partitions it would drop.
func (c *Core) purgeDryRun(ctx context.Context, req store.PurgeRequest, l *Layout) (store.PurgeResult, error) {
	var res store.PurgeResult
	_, err := QueryRow(ctx, c.db, c.expandP(pgsql.PurgeCount(l.Partitioned)),
		[]any{req.Before, req.Scope}, &res.Inbox, &res.Attempts, &res.Drift)
	if err != nil {
		return res, c.errf("purge dry run: %w", err)
	}
	return res, nil
}
