package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/txinbox/txinbox/store"
)

// Inspect returns everything stored about one key.
func (d *Driver) Inspect(ctx context.Context, key store.Key) (store.Inspection, error) {
	in := store.Inspection{Key: key}
	var ir store.InboxRecord
	var recv, proc string
	err := d.db.QueryRowContext(ctx, d.t.Expand(`SELECT source, source_position, partition_key, payload_hash, received_at, processed_at, reply
		FROM {inbox} WHERE scope = ? AND message_id = ?`), key.Scope, key.MessageID).
		Scan(&ir.Source, &ir.SourcePosition, &ir.PartitionKey, &ir.PayloadHash, &recv, &proc, &ir.Reply)
	if err := found(err, func() error {
		in.Inbox = &ir
		return parseTimes(map[*time.Time]string{&ir.ReceivedAt: recv, &ir.ProcessedAt: proc})
	}); err != nil {
		return in, err
	}
	var ar store.AttemptsRecord
	var first, last string
	err = d.db.QueryRowContext(ctx, d.t.Expand(`SELECT attempts, last_error, first_failed_at, last_failed_at
		FROM {attempts} WHERE scope = ? AND message_id = ?`), key.Scope, key.MessageID).
		Scan(&ar.Attempts, &ar.LastError, &first, &last)
	if err := found(err, func() error {
		in.Attempts = &ar
		return parseTimes(map[*time.Time]string{&ar.FirstFailedAt: first, &ar.LastFailedAt: last})
	}); err != nil {
		return in, err
	}
	dls, err := d.queryDeadLetters(ctx, `scope = ? AND message_id = ? AND message_id <> ''`, key.Scope, key.MessageID)
	if err != nil {
		return in, err
	}
	if len(dls) > 0 {
		in.DeadLetter = &dls[0]
	}
	in.Drift, err = d.listDrift(ctx, `scope = ? AND message_id = ? ORDER BY id DESC`, key.Scope, key.MessageID)
	return in, err
}

func found(err error, ok func() error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return ok()
}

// Forget deletes the key's inbox row, attempt count and dead letter and
// records the decision in the audit table, in one transaction.
func (d *Driver) Forget(ctx context.Context, key store.Key, a store.AuditEntry) (bool, error) {
	existed := false
	err := d.withTx(ctx, func(tx *sql.Tx) error {
		detail := map[string]int64{}
		for _, t := range []string{"{inbox}", "{attempts}", "{dead_letters}"} {
			r, err := tx.ExecContext(ctx, d.t.Expand(`DELETE FROM `+t+` WHERE scope = ? AND message_id = ?`), key.Scope, key.MessageID)
			if err != nil {
				return err
			}
			n, _ := r.RowsAffected()
			detail[t[1:len(t)-1]] = n
			existed = existed || n > 0
		}
		if !existed {
			return nil
		}
		return d.audit(ctx, tx, "forget", key, a, detail)
	})
	return existed, err
}

// GetDeadLetter returns one dead letter by id.
func (d *Driver) GetDeadLetter(ctx context.Context, id int64) (store.DeadLetterRecord, bool, error) {
	dls, err := d.queryDeadLetters(ctx, `id = ?`, id)
	if err != nil || len(dls) == 0 {
		return store.DeadLetterRecord{}, false, err
	}
	return dls[0], true, nil
}

// DropDeadLetter marks a dead letter handled, audited.
func (d *Driver) DropDeadLetter(ctx context.Context, id int64, a store.AuditEntry) (bool, error) {
	ok := false
	err := d.withTx(ctx, func(tx *sql.Tx) error {
		var key store.Key
		err := tx.QueryRowContext(ctx, d.t.Expand(`UPDATE {dead_letters} SET dropped_at = ? WHERE id = ? AND dropped_at IS NULL
			RETURNING scope, message_id`), formatTime(time.Now()), id).Scan(&key.Scope, &key.MessageID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		return d.audit(ctx, tx, "drop-dead-letter", key, a, map[string]int64{"dead_letter_id": id})
	})
	return ok, err
}

func (d *Driver) audit(ctx context.Context, tx *sql.Tx, action string, key store.Key, a store.AuditEntry, detail any) error {
	dj, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, d.t.Expand(`INSERT INTO {audit} (at, actor, action, scope, message_id, reason, detail) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		formatTime(time.Now()), a.Actor, action, key.Scope, key.MessageID, a.Reason, string(dj))
	return err
}
