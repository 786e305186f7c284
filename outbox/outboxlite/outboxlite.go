// Package outboxlite is the outbox table of a SQLite inbox database
// (store/sqlitestore), for package outbox's Relay: rows added with Add in
// a handler's *sql.Tx, claimed by lease.
package outboxlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/internal/table"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

// Store is the outbox table of a SQLite inbox database (sqlitestore).
// SQLite has no SKIP LOCKED, and holding its single write lock while
// sending would stall the inbox: a relay leases rows instead (lease_owner,
// lease_until) in a short write transaction, sends them with no
// transaction open, then records the outcomes in another short
// transaction that only touches rows it still leases. A crashed relay's
// lease expires and another relay sends its rows again.
type Store struct {
	db *sql.DB
	q  liteQueries
}

var (
	_ outbox.Store           = (*Store)(nil)
	_ outbox.AuditedReplayer = (*Store)(nil)
)

// Database is the inbox database New needs: a *sqlitestore.Driver. It is
// an interface only so that this package does not link the SQLite engine
// into programs that use PostgreSQL.
type Database interface {
	DB() *sql.DB
	Tables() schema.Tables
}

// New returns the outbox table of the driver's database (a
// *sqlitestore.Driver). The driver's Migrate creates it. Open the database
// as sqlitestore.Open does (_txlock=immediate, a busy timeout) when several
// processes share it.
func New(d Database) *Store {
	x := d.Tables().Expand
	cols := `id, scope, message_id, part, source, topic, key, content_type, headers, payload, created_at, attempts`
	pending := `sent_at IS NULL AND failed_at IS NULL`
	due := ` AND (next_attempt_at IS NULL OR next_attempt_at <= ?3) AND (lease_until IS NULL OR lease_until <= ?3)`
	claim := func(extra string) string {
		return x(`UPDATE {outbox} SET lease_owner = ?1, lease_until = ?2 WHERE id IN (
			SELECT id FROM {outbox} o WHERE ` + pending + due + extra + ` ORDER BY id LIMIT ?4)
			RETURNING ` + cols)
	}
	release := `, lease_owner = NULL, lease_until = NULL WHERE id = ?1 AND lease_owner = ?2`
	return &Store{db: d.DB(), q: liteQueries{
		add: x(`INSERT INTO {outbox} (scope, message_id, part, source, topic, key, content_type, headers, payload, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope, message_id, part) DO NOTHING`),
		claim: claim(""),
		// Only the head of each key: no earlier row of the key is
		// pending (waiting, retrying, or leased by another relay).
		claimOrdered: claim(` AND (o.key = '' OR NOT EXISTS (SELECT 1 FROM {outbox} e
			WHERE e.key = o.key AND e.id < o.id AND e.sent_at IS NULL AND e.failed_at IS NULL))`),
		sent:    x(`UPDATE {outbox} SET sent_at = ?3, receipt = ?4, attempts = attempts + 1, next_attempt_at = NULL` + release),
		retry:   x(`UPDATE {outbox} SET attempts = attempts + 1, last_error = ?3, next_attempt_at = ?4` + release),
		failed:  x(`UPDATE {outbox} SET attempts = attempts + 1, last_error = ?3, failed_at = ?4, next_attempt_at = NULL` + release),
		release: x(`UPDATE {outbox} SET lease_owner = NULL, lease_until = NULL WHERE id = ?1 AND lease_owner = ?2`),
		stats: x(`SELECT
			(SELECT count(*) FROM {outbox} WHERE ` + pending + `),
			(SELECT count(*) FROM {outbox} WHERE ` + pending + ` AND attempts > 0),
			(SELECT min(created_at) FROM {outbox} WHERE ` + pending + `),
			(SELECT count(*) FROM {outbox} WHERE failed_at IS NOT NULL),
			(SELECT count(*) FROM {outbox} WHERE sent_at IS NOT NULL)`),
		// CAST: a row failed because it did not scan (text in part,
		// say) must still be listed.
		listFailed: x(`SELECT id, CAST(scope AS TEXT), CAST(message_id AS TEXT), CAST(part AS INTEGER), CAST(topic AS TEXT),
			CAST(key AS TEXT), attempts, coalesce(last_error, ''), created_at, failed_at
			FROM {outbox} WHERE failed_at IS NOT NULL ORDER BY id DESC LIMIT ?`),
		replay: x(`UPDATE {outbox} SET failed_at = NULL, attempts = 0, next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL
			WHERE id = ? AND failed_at IS NOT NULL AND sent_at IS NULL`),
		replayAudited: x(`UPDATE {outbox} SET failed_at = NULL, attempts = 0, next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL
			WHERE id = ? AND failed_at IS NOT NULL AND sent_at IS NULL RETURNING scope, message_id, part`),
		audit:      x(`INSERT INTO {audit} (at, actor, action, scope, message_id, reason, detail) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		sentBefore: x(`SELECT count(*) FROM {outbox} WHERE sent_at < ?`),
		purge: x(`DELETE FROM {outbox} WHERE id IN (SELECT id FROM {outbox}
			WHERE sent_at IS NOT NULL AND sent_at < ? ORDER BY sent_at LIMIT ?)`),
	}}
}

type liteQueries struct {
	add, claim, claimOrdered, sent, retry, failed, release, stats, listFailed, replay, purge, sentBefore string
	replayAudited, audit                                                                                 string
}

// timeFormat is sqlitestore's: UTC, fixed width, so that text order is
// time order.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

// parseTime also reads the millisecond form of the created_at default.
func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// Add writes e to the outbox in tx, the handler's inbox transaction: the
// row exists only if the transaction commits. A second Add of the same
// (Scope, MessageID, Part) is ignored.
func (l *Store) Add(ctx context.Context, tx *sql.Tx, e outbox.Entry) error {
	e, h, err := table.Row(e)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, l.q.add, e.Scope, e.MessageID, e.Part, e.Source, e.Topic, e.Key, e.ContentType, h,
		e.Payload, formatTime(time.Now()))
	return err
}

// Claim implements outbox.Store: it leases up to spec.N due rows to
// spec.Owner until spec.Lease ends, in a short write transaction.
func (l *Store) Claim(ctx context.Context, spec outbox.ClaimSpec) (outbox.Batch, error) {
	now := time.Now()
	q := l.q.claim
	if spec.Ordered {
		q = l.q.claimOrdered
	}
	var msgs []*outbox.Message
	err := l.withTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, spec.Owner, formatTime(now.Add(spec.Lease)), formatTime(now), spec.N)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var m outbox.Message
			var headers []byte
			var created string
			if err := rows.Scan(&m.ID, &m.Scope, &m.MessageID, &m.Part, &m.Source, &m.Topic, &m.Key, &m.ContentType,
				&headers, &m.Payload, &created, &m.Attempt); err != nil {
				// SQLite keeps any value in any column: a row a script
				// wrote by hand fails alone, by its id.
				if m, err = unscannable(rows, err); err != nil {
					return err
				}
				msgs = append(msgs, &m)
				continue
			}
			m.Attempt++
			var terr error
			if m.CreatedAt, terr = parseTime(created); terr != nil {
				m.Unreadable = fmt.Errorf("outbox: created_at: %w", terr)
			} else {
				m.Headers, m.Unreadable = outbox.DecodeHeaders(headers)
			}
			msgs = append(msgs, &m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	// RETURNING does not promise an order.
	slices.SortFunc(msgs, func(a, b *outbox.Message) int { return cmp.Compare(a.ID, b.ID) })
	return &liteClaim{l: l, owner: spec.Owner, msgs: msgs}, nil
}

// unscannable is the row rows is on, which failed to scan with scanErr,
// as a Message with only its id, its attempt and why it is unreadable.
func unscannable(rows *sql.Rows, scanErr error) (outbox.Message, error) {
	var m outbox.Message
	var skip any
	dest := []any{&m.ID, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip}
	if err := rows.Scan(dest...); err != nil {
		return m, scanErr
	}
	m.Unreadable = fmt.Errorf("outbox: reading the row: %w", scanErr)
	m.Attempt = 1
	return m, nil
}

// liteClaim is a lease on rows; Finish records the outcomes of the rows
// whose lease this relay still holds.
type liteClaim struct {
	l     *Store
	owner string
	msgs  []*outbox.Message
}

// Messages implements outbox.Batch.
func (c *liteClaim) Messages() []*outbox.Message { return c.msgs }

// Finish implements outbox.Batch: it records the outcomes of the rows
// this claim still leases and ends their lease.
func (c *liteClaim) Finish(ctx context.Context, outs []outbox.Outcome) error {
	if len(c.msgs) == 0 {
		return nil
	}
	now := time.Now()
	return c.l.withTx(ctx, func(tx *sql.Tx) error {
		for i, o := range outs {
			var args []any
			q := c.l.q.release
			switch o.Result {
			case outbox.Sent:
				q, args = c.l.q.sent, []any{formatTime(now), []byte(o.Receipt)}
				if o.Receipt == nil {
					args[1] = nil
				}
			case outbox.Retried:
				q, args = c.l.q.retry, []any{o.Err, formatTime(now.Add(o.Delay))}
			case outbox.Failed:
				q, args = c.l.q.failed, []any{o.Err, formatTime(now)}
			}
			// A lease that expired and was taken over is not ours to
			// record: the other relay sends the row again (harmless,
			// the receiver deduplicates on the stable id).
			if _, err := tx.ExecContext(ctx, q, append([]any{c.msgs[i].ID, c.owner}, args...)...); err != nil {
				return err
			}
		}
		return nil
	})
}

func (l *Store) withTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback() //nolint:errcheck // the error that matters is err
		return err
	}
	return tx.Commit()
}

// Stats counts the rows by state.
func (l *Store) Stats(ctx context.Context) (outbox.Stats, error) {
	var s outbox.Stats
	var oldest sql.NullString
	err := l.db.QueryRowContext(ctx, l.q.stats).Scan(&s.Unsent, &s.Retrying, &oldest, &s.Failed, &s.Sent)
	if err == nil && oldest.Valid {
		s.OldestUnsent, err = parseTime(oldest.String)
	}
	return s, err
}

// ListFailed returns up to limit rows that failed for good, newest first.
func (l *Store) ListFailed(ctx context.Context, limit int) ([]outbox.FailedRow, error) {
	if err := table.ValidateLimit(limit); err != nil {
		return nil, err
	}
	rows, err := l.db.QueryContext(ctx, l.q.listFailed, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []outbox.FailedRow
	for rows.Next() {
		var r outbox.FailedRow
		var created, failed string
		if err := rows.Scan(&r.ID, &r.Scope, &r.MessageID, &r.Part, &r.Topic, &r.Key, &r.Attempts, &r.LastError,
			&created, &failed); err != nil {
			return nil, err
		}
		var err1, err2 error
		r.CreatedAt, err1 = parseTime(created)
		r.FailedAt, err2 = parseTime(failed)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("outbox: row %d: %w", r.ID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Replay puts the failed row id back: not failed, attempts 0, due now. It
// reports false when no failed row has that id.
func (l *Store) Replay(ctx context.Context, id int64) (bool, error) {
	res, err := l.db.ExecContext(ctx, l.q.replay, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// PurgeSent deletes up to limit rows sent before olderThan, oldest first.
func (l *Store) PurgeSent(ctx context.Context, olderThan time.Time, limit int) (int64, error) {
	if err := table.ValidatePurge(olderThan, limit); err != nil {
		return 0, err
	}
	res, err := l.db.ExecContext(ctx, l.q.purge, formatTime(olderThan), limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// SentBefore counts the rows sent before olderThan.
func (l *Store) SentBefore(ctx context.Context, olderThan time.Time) (int64, error) {
	var n int64
	err := l.db.QueryRowContext(ctx, l.q.sentBefore, formatTime(olderThan)).Scan(&n)
	return n, err
}

// ReplayAudited implements outbox.AuditedReplayer: it puts the failed row
// id back and records the replay in the audit table, in one transaction.
func (l *Store) ReplayAudited(ctx context.Context, id int64, a store.AuditEntry) (bool, error) {
	if err := store.ValidateAudit(a); err != nil {
		return false, err
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: a no-op
	var scope, messageID string
	var part int
	err = tx.QueryRowContext(ctx, l.q.replayAudited, id).Scan(&scope, &messageID, &part)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	at := formatTime(time.Now())
	if _, err := tx.ExecContext(ctx, l.q.audit, at, a.Actor, outbox.AuditAction, scope, messageID, a.Reason, table.AuditDetail(id, part)); err != nil {
		return false, err
	}
	return true, tx.Commit()
}
