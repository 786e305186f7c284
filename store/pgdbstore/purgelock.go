package pgdbstore

import (
	"context"
	"strings"
	"sync"

	"github.com/txinbox/txinbox/store/internal/pgcore"
	"github.com/txinbox/txinbox/store/internal/sqldb"
)

// purgeLockHeld names the failure of the purge lock's statement when
// another purger holds the lock.
const purgeLockHeld = "txinbox: purge lock held"

// PurgeLock holds a transaction advisory lock until release: one purger
// at a time across every process on this database, pgstore's purgers
// included (the same lock: see pgstore's PurgeLock for why a transaction
// lock on a dedicated connection, left open and idle).
//
// The statement carries no parameters (the schema and prefix are
// validated identifiers, inlined), so that every driver sends it in the
// simple protocol: an unnamed portal of the extended one would hold its
// snapshot for the whole purge. Without parameters it returns no rows
// either: a lock held by another purger fails it, by name.
func (d *Driver) PurgeLock(ctx context.Context) (func(), bool, error) {
	b, err := sqldb.Begin(ctx, d.db, nil, sqldb.Session{})
	if err != nil {
		return nil, false, err
	}
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	_, err = b.Tx.ExecContext(ctx, `SELECT (CASE WHEN pg_try_advisory_xact_lock(hashtextextended(
		'txinbox.purge.' || coalesce(nullif(`+lit(d.opts.Schema)+`, ''), current_schema(), '') || '.' || `+lit(d.t.Prefix)+`, 0))
		THEN '1' ELSE '`+purgeLockHeld+`' END)::int,
	(SELECT count(set_config(name, '0', true)) FROM pg_settings
		WHERE name IN ('idle_in_transaction_session_timeout', 'transaction_timeout'))`)
	if err != nil {
		endPurgeLock(b)
		if pgcore.SQLState(err) == "22P02" && strings.Contains(err.Error(), purgeLockHeld) {
			return func() {}, false, nil
		}
		return nil, false, err
	}
	var once sync.Once
	return func() { once.Do(func() { endPurgeLock(b) }) }, true, nil
}

// endPurgeLock ends the purge lock's transaction, which frees the lock,
// and gives the connection back (the pool discards it if it is broken).
func endPurgeLock(b *sqldb.Batch) {
	_ = b.Tx.Commit()
	_ = b.End()
}
