package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/txinbox/txinbox/store"
)

var _ store.Purger = (*Driver)(nil)

// PurgeBatch deletes one bounded batch of expired rows per table in its own
// (IMMEDIATE) transaction; keep Limit small so writers are not held up.
func (d *Driver) PurgeBatch(ctx context.Context, req store.PurgeRequest) (store.PurgeResult, error) {
	var res store.PurgeResult
	before := formatTime(req.Before)
	tables := []struct {
		table, column, key string
		n                  *int64
	}{
		{"{inbox}", "received_at", "(scope, message_id)", &res.Inbox},
		{"{attempts}", "last_failed_at", "(scope, message_id)", &res.Attempts},
		{"{drift}", "detected_at", "id", &res.Drift},
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
		return res, errors.New("sqlitestore: PurgeBatch: Limit must be positive")
	}
	err := d.withTx(ctx, func(tx *sql.Tx) error {
		for _, p := range tables {
			key := p.key
			r, err := tx.ExecContext(ctx, d.t.Expand(`DELETE FROM `+p.table+` WHERE `+key+` IN (
				SELECT `+strings.Trim(key, "()")+` FROM `+p.table+` WHERE `+p.column+` < ? AND (? = '' OR scope = ?)
				ORDER BY `+p.column+` LIMIT ?)`), before, req.Scope, req.Scope, req.Limit)
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

// PurgeLock always succeeds: SQLite's write lock already lets one writer at
// a time delete.
func (d *Driver) PurgeLock(context.Context) (func(), bool, error) { return func() {}, true, nil }
