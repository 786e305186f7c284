package pgcore

import (
	"context"
	"encoding/json"

	"github.com/txinbox/txinbox/store"
)

// Inspect returns everything stored about one key.
func (c *Core) Inspect(ctx context.Context, key store.Key) (store.Inspection, error) {
	in := store.Inspection{Key: key}
	var ir store.InboxRecord
	ok, err := QueryRow(ctx, c.db, c.t.Expand(`SELECT source, source_position, partition_key, payload_hash, received_at, processed_at, reply
		FROM {inbox} WHERE scope = $1 AND message_id = $2 LIMIT 1`), []any{key.Scope, key.MessageID},
		&ir.Source, &ir.SourcePosition, &ir.PartitionKey, &ir.PayloadHash, &ir.ReceivedAt, &ir.ProcessedAt, &ir.Reply)
	if err != nil {
		return in, err
	}
	if ok {
		in.Inbox = &ir
	}
	var ar store.AttemptsRecord
	ok, err = QueryRow(ctx, c.db, c.t.Expand(`SELECT attempts, last_error, first_failed_at, last_failed_at
		FROM {attempts} WHERE scope = $1 AND message_id = $2`), []any{key.Scope, key.MessageID},
		&ar.Attempts, &ar.LastError, &ar.FirstFailedAt, &ar.LastFailedAt)
	if err != nil {
		return in, err
	}
	if ok {
		in.Attempts = &ar
	}
	dls, err := c.queryDeadLetters(ctx, c.db, `scope = $1 AND message_id = $2 AND message_id <> ''`, key.Scope, key.MessageID)
	if err != nil {
		return in, err
	}
	if len(dls) > 0 {
		in.DeadLetter = &dls[0]
	}
	rows, err := c.db.Query(ctx, c.t.Expand(`SELECT id, source, source_position, stored_hash, received_hash, detected_at
		FROM {drift} WHERE scope = $1 AND message_id = $2 ORDER BY id DESC`), key.Scope, key.MessageID)
	var r store.DriftRecord
	err = ForEach(rows, err, []any{&r.ID, &r.Source, &r.SourcePosition, &r.StoredHash, &r.ReceivedHash, &r.DetectedAt}, func() error {
		r.Key = key
		in.Drift = append(in.Drift, r)
		r = store.DriftRecord{}
		return nil
	})
	return in, err
}

// Forget deletes the key's inbox row, attempt count and dead letter and
// records the decision in the audit table, in one transaction.
func (c *Core) Forget(ctx context.Context, key store.Key, a store.AuditEntry) (bool, error) {
	existed := false
	err := c.db.InTx(ctx, func(tx Querier) error {
		detail := map[string]int64{}
		for _, t := range []string{"{inbox}", "{attempts}", "{dead_letters}"} {
			n, err := tx.Exec(ctx, c.t.Expand(`DELETE FROM `+t+` WHERE scope = $1 AND message_id = $2`), key.Scope, key.MessageID)
			if err != nil {
				return err
			}
			detail[t[1:len(t)-1]] = n
			existed = existed || n > 0
		}
		if !existed {
			return nil
		}
		return c.audit(ctx, tx, "forget", key, a, detail)
	})
	return existed, err
}

// GetDeadLetter returns one dead letter by id.
func (c *Core) GetDeadLetter(ctx context.Context, id int64) (store.DeadLetterRecord, bool, error) {
	dls, err := c.queryDeadLetters(ctx, c.db, `id = $1`, id)
	if err != nil || len(dls) == 0 {
		return store.DeadLetterRecord{}, false, err
	}
	return dls[0], true, nil
}

// DropDeadLetter marks a dead letter handled, audited.
func (c *Core) DropDeadLetter(ctx context.Context, id int64, a store.AuditEntry) (bool, error) {
	ok := false
	err := c.db.InTx(ctx, func(tx Querier) error {
		var key store.Key
		found, err := QueryRow(ctx, tx, c.t.Expand(`UPDATE {dead_letters} SET dropped_at = now() WHERE id = $1 AND dropped_at IS NULL
			RETURNING scope, message_id`), []any{id}, &key.Scope, &key.MessageID)
		if err != nil || !found {
			return err
		}
		ok = true
		return c.audit(ctx, tx, "drop-dead-letter", key, a, map[string]int64{"dead_letter_id": id})
	})
	return ok, err
}

func (c *Core) audit(ctx context.Context, tx Querier, action string, key store.Key, a store.AuditEntry, detail any) error {
	dj, err := json.Marshal(detail)
	if err != nil {
		return c.errf("audit detail: %w", err)
	}
	_, err = tx.Exec(ctx, c.t.Expand(`INSERT INTO {audit} (actor, action, scope, message_id, reason, detail) VALUES ($1, $2, $3, $4, $5, $6)`),
		a.Actor, action, key.Scope, key.MessageID, a.Reason, string(dj))
	return err
}
