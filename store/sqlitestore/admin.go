package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

// withTx runs fn in a transaction of its own.
func (d *Driver) withTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback() //nolint:errcheck // the first error is the one to report
		return err
	}
	return tx.Commit()
}

// RecordFailures counts the failed attempts and dead-letters the rows that
// reached maxAttempts, in one short transaction of its own.
func (d *Driver) RecordFailures(ctx context.Context, rows []store.FailureRow, maxAttempts int) ([]store.FailureResult, error) {
	res := make([]store.FailureResult, len(rows))
	stmt := d.t.Expand(`INSERT INTO {attempts} AS a (scope, message_id, attempts, last_error, first_failed_at, last_failed_at)
VALUES (?, ?, 1, ?, ?, ?)
ON CONFLICT (scope, message_id) DO UPDATE
   SET attempts = a.attempts + 1, last_error = excluded.last_error, last_failed_at = excluded.last_failed_at
RETURNING attempts`)
	inInbox := d.t.Expand(`SELECT payload_hash FROM {inbox} WHERE scope = ? AND message_id = ?`)
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
			if err := tx.QueryRowContext(ctx, stmt, r.Scope, r.MessageID, r.Error, at, at).Scan(&res[i].Attempts); err != nil {
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

func insertDeadLetters(ctx context.Context, tx *sql.Tx, t schema.Tables, rows []store.DeadLetterRow) error {
	stmt := t.Expand(`INSERT INTO {dead_letters} (scope, message_id, source, source_position, partition_key, payload,
    payload_hash, headers, attempts, reason, last_error, received_at, dead_lettered_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (scope, message_id) WHERE message_id <> '' DO NOTHING`)
	for _, r := range rows {
		payload := r.Payload
		if payload == nil {
			payload = []byte{}
		}
		if _, err := tx.ExecContext(ctx, stmt, r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey,
			payload, r.PayloadHash, string(r.HeadersJSON), r.Attempts, r.Reason, r.LastError,
			formatTime(r.ReceivedAt), formatTime(r.DeadLetteredAt)); err != nil {
			return err
		}
	}
	return nil
}

// Migrate applies the embedded migrations not applied yet. Its transaction
// begins IMMEDIATE, so two processes migrating at once take turns.
func (d *Driver) Migrate(ctx context.Context) error {
	ms, err := schema.Load(schema.Sub(migrationFS, "migrations"), d.t)
	if err != nil {
		return err
	}
	return d.withTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, d.t.Expand(`CREATE TABLE IF NOT EXISTS {migrations} (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`)); err != nil {
			return err
		}
		for _, m := range ms {
			var n int
			if err := tx.QueryRowContext(ctx, d.t.Expand(`SELECT count(*) FROM {migrations} WHERE version = ?`), m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("sqlitestore: migration %03d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, d.t.Expand(`INSERT INTO {migrations} (version, name, applied_at) VALUES (?, ?, ?)`),
				m.Version, m.Name, formatTime(time.Now())); err != nil {
				return err
			}
		}
		return nil
	})
}

// Stats counts the rows of each inbox table.
func (d *Driver) Stats(ctx context.Context) (store.Stats, error) {
	var s store.Stats
	var oldest sql.NullString
	err := d.db.QueryRowContext(ctx, d.t.Expand(`SELECT
		(SELECT count(*) FROM {inbox}), (SELECT count(*) FROM {attempts}),
		(SELECT count(*) FROM {dead_letters}), (SELECT count(*) FROM {drift}),
		(SELECT min(received_at) FROM {inbox})`)).Scan(&s.Inbox, &s.Attempts, &s.DeadLetters, &s.Drift, &oldest)
	if err == nil && oldest.Valid {
		s.OldestInbox, err = parseTime(oldest.String)
	}
	return s, err
}

// ListDrift returns drift records, newest first.
func (d *Driver) ListDrift(ctx context.Context, f store.ListFilter) ([]store.DriftRecord, error) {
	w := liteWhere()
	w.ListFilter(f, "detected_at", false)
	return d.listDrift(ctx, w.String()+` ORDER BY id DESC LIMIT `+strconv.Itoa(limit(f)), w.Args...)
}

func (d *Driver) listDrift(ctx context.Context, where string, args ...any) ([]store.DriftRecord, error) {
	rows, err := d.db.QueryContext(ctx, d.t.Expand(`SELECT id, scope, message_id, source, source_position, stored_hash, received_hash, detected_at
		FROM {drift} WHERE `+where), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.DriftRecord
	for rows.Next() {
		var r store.DriftRecord
		var at string
		if err := rows.Scan(&r.ID, &r.Scope, &r.MessageID, &r.Source, &r.SourcePosition, &r.StoredHash, &r.ReceivedHash, &at); err != nil {
			return nil, err
		}
		if r.DetectedAt, err = parseTime(at); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ListDeadLetters returns dead letters, newest first.
// Pages walk the primary key backwards from f.Before.
func (d *Driver) ListDeadLetters(ctx context.Context, f store.ListFilter) ([]store.DeadLetterRecord, error) {
	w := liteWhere()
	w.ListFilter(f, "dead_lettered_at", true)
	return d.selectDeadLetters(ctx, !f.OmitPayload, w.String()+` ORDER BY id DESC LIMIT `+strconv.Itoa(limit(f)), w.Args...)
}

func liteWhere() *schema.Where {
	return &schema.Where{Placeholder: func(int) string { return "?" }, Time: func(t time.Time) any { return formatTime(t) }}
}

func (d *Driver) queryDeadLetters(ctx context.Context, where string, args ...any) ([]store.DeadLetterRecord, error) {
	return d.selectDeadLetters(ctx, true, where, args...)
}

// selectDeadLetters selects dead letters WHERE where, with their payloads
// or without.
func (d *Driver) selectDeadLetters(ctx context.Context, payload bool, where string, args ...any) ([]store.DeadLetterRecord, error) {
	payloadCol := "payload"
	if !payload {
		payloadCol = "X''"
	}
	rows, err := d.db.QueryContext(ctx, d.t.Expand(`SELECT id, scope, message_id, source, source_position, partition_key,
		`+payloadCol+`, payload_hash, headers, attempts, reason, last_error, received_at, dead_lettered_at, dropped_at
		FROM {dead_letters} WHERE `+where), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.DeadLetterRecord
	for rows.Next() {
		var r store.DeadLetterRecord
		var headers, recv, dlAt string
		var dropped sql.NullString
		if err := rows.Scan(&r.ID, &r.Scope, &r.MessageID, &r.Source, &r.SourcePosition, &r.PartitionKey, &r.Payload,
			&r.PayloadHash, &headers, &r.Attempts, &r.Reason, &r.LastError, &recv, &dlAt, &dropped); err != nil {
			return nil, err
		}
		r.HeadersJSON = []byte(headers)
		if err := parseTimes(map[*time.Time]string{&r.ReceivedAt: recv, &r.DeadLetteredAt: dlAt, &r.DroppedAt: dropped.String}); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// parseTimes parses each non-empty text into its time.
func parseTimes(m map[*time.Time]string) error {
	for dst, s := range m {
		if s == "" {
			continue
		}
		t, err := parseTime(s)
		if err != nil {
			return err
		}
		*dst = t
	}
	return nil
}

func limit(f store.ListFilter) int {
	if f.Limit <= 0 {
		return 100
	}
	return f.Limit
}

// Checkpoints returns the saved position of each partition of source.
func (d *Driver) Checkpoints(ctx context.Context, scope, source string) (map[int32]int64, error) {
	rows, err := d.db.QueryContext(ctx, d.t.Expand(`SELECT partition, position FROM {checkpoints} WHERE scope = ? AND source = ?`), scope, source)
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
	return out, rows.Err()
}

// ScopeStats counts per scope (a scan of the tables). A message counts
// under Attempts only while it is being retried: neither processed nor
// dead-lettered (a dropped dead letter included: its redeliveries stay
// refused), though its attempts row stays.
func (d *Driver) ScopeStats(ctx context.Context, expiredBefore time.Time) ([]store.ScopeStats, error) {
	rows, err := d.db.QueryContext(ctx, d.t.Expand(`WITH s AS (
	SELECT scope FROM {inbox} UNION SELECT scope FROM {attempts} UNION SELECT scope FROM {dead_letters} UNION SELECT scope FROM {drift}),
i AS (SELECT scope, count(*) AS n, coalesce(sum(received_at < ?), 0) AS expired, min(received_at) AS oldest FROM {inbox} GROUP BY scope),
a AS (SELECT scope, count(*) AS n FROM {attempts} x WHERE NOT EXISTS (SELECT 1 FROM {inbox} y WHERE y.scope = x.scope AND y.message_id = x.message_id)
	AND NOT EXISTS (SELECT 1 FROM {dead_letters} z WHERE z.scope = x.scope AND z.message_id = x.message_id AND z.message_id <> '') GROUP BY scope),
d AS (SELECT scope, count(*) AS n FROM {dead_letters} WHERE dropped_at IS NULL GROUP BY scope),
f AS (SELECT scope, count(*) AS n FROM {drift} GROUP BY scope)
SELECT s.scope, coalesce(i.n, 0), coalesce(i.expired, 0), i.oldest, coalesce(a.n, 0), coalesce(d.n, 0), coalesce(f.n, 0)
FROM s LEFT JOIN i USING (scope) LEFT JOIN a USING (scope) LEFT JOIN d USING (scope) LEFT JOIN f USING (scope)
ORDER BY s.scope
`), formatTime(expiredBefore))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ScopeStats
	for rows.Next() {
		var s store.ScopeStats
		var oldest sql.NullString
		if err := rows.Scan(&s.Scope, &s.Inbox, &s.Expired, &oldest, &s.Attempts, &s.DeadLetters, &s.Drift); err != nil {
			return nil, err
		}
		if err := parseTimes(map[*time.Time]string{&s.OldestInbox: oldest.String}); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// InboxGauges reads the inbox figures for a metrics scrape: the exact row
// count, the rows received before cutoff and the oldest received_at (both
// from the received_at index).
func (d *Driver) InboxGauges(ctx context.Context, cutoff time.Time) (store.InboxGauges, error) {
	var g store.InboxGauges
	var oldest sql.NullString
	err := d.db.QueryRowContext(ctx, d.t.Expand(`SELECT (SELECT count(*) FROM {inbox}),
		(SELECT count(*) FROM {inbox} WHERE received_at < ?), (SELECT min(received_at) FROM {inbox})`),
		formatTime(cutoff)).Scan(&g.Rows, &g.Expired, &oldest)
	if err == nil && oldest.Valid {
		g.OldestReceived, err = parseTime(oldest.String)
	}
	return g, err
}
