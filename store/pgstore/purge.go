package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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

// PurgeLock holds a transaction advisory lock until release: one purger at
// a time across every process on this database, directly or behind a
// transaction pooler (PgBouncer pool_mode=transaction).
//
// The lock is pg_try_advisory_xact_lock in a READ COMMITTED transaction
// of its own, left open, idle, on a dedicated connection until release
// commits it. A session lock (pg_try_advisory_lock, then
// pg_advisory_unlock) does not survive a transaction pooler: the pooler
// may run the unlock on another server connection, where it only warns,
// and the lock stays held on an idle server connection after the process
// exited, so that every later purger skipped its rounds. An open
// transaction keeps its server connection, and ends with its client:
// the lock goes with the commit, or with the connection when the process
// dies. Idle in a READ COMMITTED transaction that wrote nothing, the
// session holds no snapshot and no transaction id, so it does not hold
// back vacuum (backend_xmin stays NULL); the isolation level is explicit
// because a default_transaction_isolation of REPEATABLE READ would keep
// the first statement's snapshot until release.
//
// The transaction turns off idle_in_transaction_session_timeout (and
// PostgreSQL 17's transaction_timeout) for itself, so that the server
// does not end it during a long purge. If the session is ended anyway
// (pg_terminate_backend, PgBouncer's idle_transaction_timeout, a lost
// connection), the lock is gone and the round goes on without it: another
// purger may then run at the same time, which is safe (each batch is its
// own transaction and skips the rows others hold; partition changes take
// their own locks) but does the work twice. Release then finds the
// connection broken and discards it.
func (d *Driver) PurgeLock(ctx context.Context) (func(), bool, error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		conn.Release() // the pool discards a connection left in a transaction
		return nil, false, err
	}
	// The lock names the schema the tables are in (the search_path's when
	// Options.Schema is empty), so inboxes in other schemas purge freely.
	// The statement goes in the simple protocol, whatever the pool's
	// default: in the extended one, its unnamed portal would stay open,
	// holding its snapshot (and so backend_xmin), until the next Bind or
	// the end of the transaction, that is for the whole purge.
	var ok bool
	err = tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended(
		'txinbox.purge.' || coalesce(nullif($1, ''), current_schema(), '') || '.' || $2, 0)),
	(SELECT count(set_config(name, '0', true)) FROM pg_settings
		WHERE name IN ('idle_in_transaction_session_timeout', 'transaction_timeout'))`,
		pgx.QueryExecModeSimpleProtocol, d.schema, d.t.Prefix).Scan(&ok, nil)
	if err != nil || !ok {
		endPurgeLock(conn, tx)
		if err != nil {
			return nil, false, err
		}
		return func() {}, false, nil
	}
	var once sync.Once
	return func() { once.Do(func() { endPurgeLock(conn, tx) }) }, true, nil
}

// purgeLockEndTimeout bounds the commit that frees the purge lock; a
// connection that does not answer in time is closed, which frees it too.
const purgeLockEndTimeout = 10 * time.Second

// endPurgeLock ends the purge lock's transaction, which frees the lock,
// and gives the connection back, or closes it when the commit fails.
func endPurgeLock(conn *pgxpool.Conn, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.Background(), purgeLockEndTimeout)
	defer cancel()
	if err := tx.Commit(ctx); err != nil {
		conn.Conn().Close(ctx) //nolint:errcheck // closing frees the lock
	}
	conn.Release()
}
