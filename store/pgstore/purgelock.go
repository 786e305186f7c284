package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store"
)

var _ store.Purger = (*Driver)(nil)

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
		pgx.QueryExecModeSimpleProtocol, d.opts.Schema, d.Tables().Prefix).Scan(&ok, nil)
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
