package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/txinbox/txinbox/store"
)

// PurgeBatch deletes at most req.Limit expired rows per table, oldest
// first, in a short READ COMMITTED transaction of its own (no gap locks:
// inserts of new rows are never held up). MySQL's DELETE has no SKIP
// LOCKED: a row that a batch transaction holds (a redelivery of an
// expired key) makes the purge wait for it, up to innodb_lock_wait_timeout.
func (d *Driver) PurgeBatch(ctx context.Context, req store.PurgeRequest) (store.PurgeResult, error) {
	var res store.PurgeResult
	before := formatTime(req.Before)
	tables := []struct {
		table, column string
		n             *int64
	}{
		{"{inbox}", "received_at", &res.Inbox},
		{"{attempts}", "last_failed_at", &res.Attempts},
		{"{drift}", "detected_at", &res.Drift},
	}
	if req.DryRun {
		for _, p := range tables {
			err := d.db.QueryRowContext(ctx, d.t.Expand(`SELECT count(*) FROM `+p.table+` WHERE `+p.column+` < ? AND (? = '' OR scope = ?)`),
				before, req.Scope, req.Scope).Scan(p.n)
			if err != nil {
				return res, err
			}
		}
		return res, nil
	}
	if req.Limit <= 0 {
		return res, errors.New("mysqlstore: PurgeBatch: Limit must be positive")
	}
	err := d.withTx(ctx, func(tx *sql.Tx) error {
		for _, p := range tables {
			r, err := tx.ExecContext(ctx, d.t.Expand(`DELETE FROM `+p.table+` WHERE `+p.column+` < ? AND (? = '' OR scope = ?)
				ORDER BY `+p.column+` LIMIT ?`), before, req.Scope, req.Scope, req.Limit)
			if err != nil {
				return err
			}
			if *p.n, err = r.RowsAffected(); err != nil {
				return err
			}
		}
		return nil
	})
	return res, err
}

// PurgeLock takes a named lock (GET_LOCK, held by a connection of its
// own until release): one purger at a time across every process on this
// database and table prefix.
func (d *Driver) PurgeLock(ctx context.Context) (func(), bool, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	var got sql.NullInt64
	name := "txinbox.purge." + d.t.Prefix
	if err := c.QueryRowContext(ctx, `SELECT GET_LOCK(CONCAT(?, DATABASE()), 0)`, name).Scan(&got); err != nil {
		c.Close()
		return nil, false, err
	}
	if got.Int64 != 1 {
		c.Close()
		return func() {}, false, nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			_, _ = c.ExecContext(context.Background(), `SELECT RELEASE_LOCK(CONCAT(?, DATABASE()))`, name)
			_ = c.Close()
		})
	}, true, nil
}
