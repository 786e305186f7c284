package mysqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

// withTx runs fn in a READ COMMITTED transaction of its own, committed
// when fn returns nil.
func (d *Driver) withTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// RecordFailures counts the failed attempts and dead-letters the rows that
// reached maxAttempts, in one short transaction of its own. A key the
// inbox holds (read with a locking read: committed by now) is left alone
// and reported Committed, with its drift if the payloads differ.
func (d *Driver) RecordFailures(ctx context.Context, rows []store.FailureRow, maxAttempts int) ([]store.FailureResult, error) {
	res := make([]store.FailureResult, len(rows))
	count := d.t.Expand(`INSERT INTO {attempts} (scope, message_id, attempts, last_error, first_failed_at, last_failed_at)
VALUES (?, ?, 1, ?, ?, ?)
ON DUPLICATE KEY UPDATE attempts = attempts + 1, last_error = VALUES(last_error), last_failed_at = VALUES(last_failed_at)`)
	inInbox := d.t.Expand(`SELECT payload_hash FROM {inbox} WHERE scope = ? AND message_id = ? LOCK IN SHARE MODE`)
	attempts := d.t.Expand(`SELECT attempts FROM {attempts} WHERE scope = ? AND message_id = ?`)
	err := d.withTx(ctx, func(tx *sql.Tx) error {
		var dead []store.DeadLetterRow
		var drift []store.DriftRow
		for i, r := range rows {
			var stored []byte
			switch err := tx.QueryRowContext(ctx, inInbox, r.Scope, r.MessageID).Scan(&stored); {
			case err == nil:
				res[i].Committed = true
				if d, ok := store.FailureDrift(r, stored); ok {
					res[i].Drift = true
					drift = append(drift, d)
				}
				continue
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
			at := formatTime(r.FailedAt)
			if _, err := tx.ExecContext(ctx, count, r.Scope, r.MessageID, r.Error, at, at); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, attempts, r.Scope, r.MessageID).Scan(&res[i].Attempts); err != nil {
				return err
			}
			if r.Permanent || res[i].Attempts >= maxAttempts {
				res[i].DeadLettered = true
				dl := r.DeadLetter
				dl.Attempts = res[i].Attempts
				dead = append(dead, dl)
			}
		}
		if err := insertDrift(ctx, tx, d.t, drift); err != nil {
			return err
		}
		return insertDeadLetters(ctx, tx, d.t, dead)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func insertDrift(ctx context.Context, tx *sql.Tx, t schema.Tables, rows []store.DriftRow) error {
	stmt := t.Expand(`INSERT INTO {drift} (scope, message_id, source, source_position, stored_hash, received_hash, detected_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`)
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, stmt, r.Scope, r.MessageID, r.Source, r.SourcePosition,
			r.StoredHash, r.ReceivedHash, formatTime(r.DetectedAt)); err != nil {
			return err
		}
	}
	return nil
}

// insertDeadLetters inserts dead letters; one whose key is dead-lettered
// already is left out (the unique key on (scope, key_id)).
func insertDeadLetters(ctx context.Context, tx *sql.Tx, t schema.Tables, rows []store.DeadLetterRow) error {
	stmt := t.Expand(`INSERT INTO {dead_letters} (scope, message_id, source, source_position, partition_key, payload,
    payload_hash, headers, attempts, reason, last_error, received_at, dead_lettered_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE id = id`)
	for _, r := range rows {
		payload := r.Payload
		if payload == nil {
			payload = []byte{}
		}
		hash := r.PayloadHash
		if hash == nil {
			hash = []byte{}
		}
		headers := string(r.HeadersJSON)
		if headers == "" {
			headers = "[]"
		}
		if _, err := tx.ExecContext(ctx, stmt, r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey,
			payload, hash, headers, r.Attempts, r.Reason, r.LastError,
			formatTime(r.ReceivedAt), formatTime(r.DeadLetteredAt)); err != nil {
			return err
		}
	}
	return nil
}

// Checkpoints returns the saved position of each partition of source.
func (d *Driver) Checkpoints(ctx context.Context, scope, source string) (map[int32]int64, error) {
	rows, err := d.db.QueryContext(ctx, d.t.Expand("SELECT `partition`, position FROM {checkpoints} WHERE scope = ? AND source = ?"), scope, source)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var text string
		var pos int64
		if err := rows.Scan(&text, &pos); err != nil {
			return nil, err
		}
		part, err := store.ParsePartition(text)
		if err != nil {
			return nil, err
		}
		out[part] = pos
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
