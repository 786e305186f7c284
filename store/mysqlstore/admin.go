package mysqlstore

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLockTimeout bounds the wait for another process's migration.
const migrateLockTimeout = 60

// statementEnd splits a migration file into its statements: MySQL runs
// one per round trip (without multiStatements, which the store does not
// ask of the application's DSN).
var statementEnd = regexp.MustCompile(`;\s*\n`)

// Migrate applies the embedded migrations that are not applied yet, then
// checks the key columns (CheckKeys): every command and serve migrate at
// start, so a key column changed to a case-insensitive collation stops
// them. DDL
// commits implicitly in MySQL, so a migration is no transaction: each
// statement is idempotent (IF NOT EXISTS; an ADD COLUMN answered
// "Duplicate column" is taken as done), and a named lock (GET_LOCK)
// makes two processes migrating at once take turns.
func (d *Driver) Migrate(ctx context.Context) error {
	ms, err := schema.Load(schema.Sub(migrationFS, "migrations"), d.t)
	if err != nil {
		return err
	}
	c, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	lock := "txinbox.migrate." + d.t.Prefix
	var got sql.NullInt64
	if err := c.QueryRowContext(ctx, `SELECT GET_LOCK(CONCAT(?, DATABASE()), ?)`, lock, migrateLockTimeout).Scan(&got); err != nil {
		return err
	}
	if got.Int64 != 1 {
		return fmt.Errorf("mysqlstore: Migrate: another migration held the lock %q for %d s", lock, migrateLockTimeout)
	}
	defer c.ExecContext(context.WithoutCancel(ctx), `SELECT RELEASE_LOCK(CONCAT(?, DATABASE()))`, lock) //nolint:errcheck // the connection's close frees it too
	if _, err := c.ExecContext(ctx, d.t.Expand(`CREATE TABLE IF NOT EXISTS {migrations} (
		version INT NOT NULL PRIMARY KEY, name VARCHAR(200) NOT NULL, applied_at DATETIME(6) NOT NULL) ENGINE=InnoDB`)); err != nil {
		return err
	}
	for _, m := range ms {
		var n int
		if err := c.QueryRowContext(ctx, d.t.Expand(`SELECT count(*) FROM {migrations} WHERE version = ?`), m.Version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		for _, s := range statementEnd.Split(m.SQL, -1) {
			if strings.TrimSpace(stripComments(s)) == "" {
				continue
			}
			if _, err := c.ExecContext(ctx, s); err != nil && errorNumber(err) != erDupFieldName {
				return fmt.Errorf("mysqlstore: migration %03d_%s: %w", m.Version, m.Name, err)
			}
		}
		if _, err := c.ExecContext(ctx, d.t.Expand(`INSERT INTO {migrations} (version, name, applied_at) VALUES (?, ?, ?)`),
			m.Version, m.Name, formatTime(time.Now())); err != nil {
			return err
		}
	}
	return d.CheckKeys(ctx)
}

// stripComments drops the "--" comment lines of a statement.
func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Stats counts the rows of each inbox table.
func (d *Driver) Stats(ctx context.Context) (store.Stats, error) {
	var s store.Stats
	err := d.db.QueryRowContext(ctx, d.t.Expand(`SELECT
		(SELECT count(*) FROM {inbox}), (SELECT count(*) FROM {attempts}),
		(SELECT count(*) FROM {dead_letters}), (SELECT count(*) FROM {drift}),
		(SELECT min(received_at) FROM {inbox})`)).Scan(&s.Inbox, &s.Attempts, &s.DeadLetters, &s.Drift, at(&s.OldestInbox))
	return s, err
}

func myWhere() *schema.Where {
	return &schema.Where{Placeholder: func(int) string { return "?" }, Time: func(t time.Time) any { return formatTime(t) }}
}

func limit(f store.ListFilter) int {
	if f.Limit <= 0 {
		return 100
	}
	return f.Limit
}

// ListDrift returns drift records, newest first, paged by id.
func (d *Driver) ListDrift(ctx context.Context, f store.ListFilter) ([]store.DriftRecord, error) {
	w := myWhere()
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
		if err := rows.Scan(&r.ID, &r.Scope, &r.MessageID, &r.Source, &r.SourcePosition, &r.StoredHash, &r.ReceivedHash, at(&r.DetectedAt)); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ListDeadLetters returns dead letters, newest first, paged by id.
func (d *Driver) ListDeadLetters(ctx context.Context, f store.ListFilter) ([]store.DeadLetterRecord, error) {
	w := myWhere()
	w.ListFilter(f, "dead_lettered_at", true)
	return d.selectDeadLetters(ctx, !f.OmitPayload, w.String()+` ORDER BY id DESC LIMIT `+strconv.Itoa(limit(f)), w.Args...)
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
		var headers string
		if err := rows.Scan(&r.ID, &r.Scope, &r.MessageID, &r.Source, &r.SourcePosition, &r.PartitionKey, &r.Payload,
			&r.PayloadHash, &headers, &r.Attempts, &r.Reason, &r.LastError, at(&r.ReceivedAt), at(&r.DeadLetteredAt), at(&r.DroppedAt)); err != nil {
			return nil, err
		}
		if r.Payload == nil {
			r.Payload = []byte{}
		}
		r.HeadersJSON = []byte(headers)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Inspect returns everything stored about one key.
func (d *Driver) Inspect(ctx context.Context, key store.Key) (store.Inspection, error) {
	in := store.Inspection{Key: key}
	var ir store.InboxRecord
	err := d.db.QueryRowContext(ctx, d.t.Expand(`SELECT source, source_position, partition_key, payload_hash, received_at, processed_at, reply
		FROM {inbox} WHERE scope = ? AND message_id = ?`), key.Scope, key.MessageID).
		Scan(&ir.Source, &ir.SourcePosition, &ir.PartitionKey, &ir.PayloadHash, at(&ir.ReceivedAt), at(&ir.ProcessedAt), &ir.Reply)
	if err := found(err, func() { in.Inbox = &ir }); err != nil {
		return in, err
	}
	var ar store.AttemptsRecord
	err = d.db.QueryRowContext(ctx, d.t.Expand(`SELECT attempts, last_error, first_failed_at, last_failed_at
		FROM {attempts} WHERE scope = ? AND message_id = ?`), key.Scope, key.MessageID).
		Scan(&ar.Attempts, &ar.LastError, at(&ar.FirstFailedAt), at(&ar.LastFailedAt))
	if err := found(err, func() { in.Attempts = &ar }); err != nil {
		return in, err
	}
	dls, err := d.selectDeadLetters(ctx, true, `scope = ? AND key_id = ?`, key.Scope, key.MessageID)
	if err != nil {
		return in, err
	}
	if len(dls) > 0 {
		in.DeadLetter = &dls[0]
	}
	in.Drift, err = d.listDrift(ctx, `scope = ? AND message_id = ? ORDER BY id DESC`, key.Scope, key.MessageID)
	return in, err
}

func found(err error, ok func()) error {
	if errors.Is(err, sql.ErrNoRows) {
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
	err := d.withTx(ctx, func(tx *sql.Tx) error {
		existed = false
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
	dls, err := d.selectDeadLetters(ctx, true, `id = ?`, id)
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
		err := tx.QueryRowContext(ctx, d.t.Expand(`SELECT scope, message_id FROM {dead_letters} WHERE id = ? AND dropped_at IS NULL FOR UPDATE`), id).
			Scan(&key.Scope, &key.MessageID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, d.t.Expand(`UPDATE {dead_letters} SET dropped_at = ? WHERE id = ?`), formatTime(time.Now()), id); err != nil {
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
