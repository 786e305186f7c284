package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
)

// Inspect returns everything stored about one key.
func (d *Driver) Inspect(ctx context.Context, key store.Key) (store.Inspection, error) {
	in := store.Inspection{Key: key}
	var ir store.InboxRecord
	err := d.pool.QueryRow(ctx, d.t.Expand(`SELECT source, source_position, partition_key, payload_hash, received_at, processed_at, reply
		FROM {inbox} WHERE scope = $1 AND message_id = $2 LIMIT 1`), key.Scope, key.MessageID).
		Scan(&ir.Source, &ir.SourcePosition, &ir.PartitionKey, &ir.PayloadHash, &ir.ReceivedAt, &ir.ProcessedAt, &ir.Reply)
	if err := found(err, func() { in.Inbox = &ir }); err != nil {
		return in, err
	}
	var ar store.AttemptsRecord
	err = d.pool.QueryRow(ctx, d.t.Expand(`SELECT attempts, last_error, first_failed_at, last_failed_at
		FROM {attempts} WHERE scope = $1 AND message_id = $2`), key.Scope, key.MessageID).
		Scan(&ar.Attempts, &ar.LastError, &ar.FirstFailedAt, &ar.LastFailedAt)
	if err := found(err, func() { in.Attempts = &ar }); err != nil {
		return in, err
	}
	dls, err := d.queryDeadLetters(ctx, d.pool, `scope = $1 AND message_id = $2 AND message_id <> ''`, key.Scope, key.MessageID)
	if err != nil {
		return in, err
	}
	if len(dls) > 0 {
		in.DeadLetter = &dls[0]
	}
	rows, _ := d.pool.Query(ctx, d.t.Expand(`SELECT id, source, source_position, stored_hash, received_hash, detected_at
		FROM {drift} WHERE scope = $1 AND message_id = $2 ORDER BY id DESC`), key.Scope, key.MessageID)
	var r store.DriftRecord
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.Source, &r.SourcePosition, &r.StoredHash, &r.ReceivedHash, &r.DetectedAt}, func() error {
		r.Key = key
		in.Drift = append(in.Drift, r)
		r = store.DriftRecord{}
		return nil
	})
	return in, err
}

// found turns "no rows" into nothing and calls ok for a row.
func found(err error, ok func()) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err == nil {
		ok()
	}
	return err
}

// Forget deletes the key's inbox row, attempt count and dead letter and
// records the decision in the audit table, in one transaction.
func (d *Driver) Forget(ctx context.Context, key store.Key, a store.AuditEntry) (bool, error) {
	existed := false
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		detail := map[string]int64{}
		for _, t := range []string{"{inbox}", "{attempts}", "{dead_letters}"} {
			tag, err := tx.Exec(ctx, d.t.Expand(`DELETE FROM `+t+` WHERE scope = $1 AND message_id = $2`), key.Scope, key.MessageID)
			if err != nil {
				return err
			}
			detail[t[1:len(t)-1]] = tag.RowsAffected()
			existed = existed || tag.RowsAffected() > 0
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
	dls, err := d.queryDeadLetters(ctx, d.pool, `id = $1`, id)
	if err != nil || len(dls) == 0 {
		return store.DeadLetterRecord{}, false, err
	}
	return dls[0], true, nil
}

// DropDeadLetter marks a dead letter handled, audited.
func (d *Driver) DropDeadLetter(ctx context.Context, id int64, a store.AuditEntry) (bool, error) {
	ok := false
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		var key store.Key
		err := tx.QueryRow(ctx, d.t.Expand(`UPDATE {dead_letters} SET dropped_at = now() WHERE id = $1 AND dropped_at IS NULL
			RETURNING scope, message_id`), id).Scan(&key.Scope, &key.MessageID)
		if errors.Is(err, pgx.ErrNoRows) {
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

func (d *Driver) audit(ctx context.Context, tx pgx.Tx, action string, key store.Key, a store.AuditEntry, detail any) error {
	dj, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("pgstore: audit detail: %w", err)
	}
	_, err = tx.Exec(ctx, d.t.Expand(`INSERT INTO {audit} (actor, action, scope, message_id, reason, detail) VALUES ($1, $2, $3, $4, $5, $6)`),
		a.Actor, action, key.Scope, key.MessageID, a.Reason, string(dj))
	return err
}
