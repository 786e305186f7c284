package outbox

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/txinbox/txinbox/internal/schema"
)

// Lite is the outbox table of a SQLite inbox database (sqlitestore).
// SQLite has no SKIP LOCKED, and holding its single write lock while
// sending would stall the inbox: a relay leases rows instead (lease_owner,
// lease_until) in a short write transaction, sends them with no
// transaction open, then records the outcomes in another short
// transaction that only touches rows it still leases. A crashed relay's
// lease expires and another relay sends its rows again.
type Lite struct {
	db *sql.DB
	q  liteQueries
}

var _ Store = (*Lite)(nil)

// SQLiteDatabase is the inbox database SQLite needs: a *sqlitestore.Driver.
// It is an interface only so that this package does not link the SQLite
// engine into programs that use PostgreSQL.
type SQLiteDatabase interface {
	DB() *sql.DB
	Tables() schema.Tables
}

// SQLite returns the outbox table of the driver's database (a
// *sqlitestore.Driver). The driver's Migrate creates it. Open the database
// as sqlitestore.Open does (_txlock=immediate, a busy timeout) when several
// processes share it.
func SQLite(d SQLiteDatabase) *Lite {
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
	return &Lite{db: d.DB(), q: liteQueries{
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
func (l *Lite) Add(ctx context.Context, tx *sql.Tx, e Entry) error {
	if err := validateEntry(&e); err != nil {
		return err
	}
	h, err := headersJSON(e.Headers)
	if err != nil {
		return err
	}
	if e.Payload == nil {
		e.Payload = []byte{}
	}
	_, err = tx.ExecContext(ctx, l.q.add, e.Scope, e.MessageID, e.Part, e.Source, e.Topic, e.Key, e.ContentType, h,
		e.Payload, formatTime(time.Now()))
	return err
}

func (l *Lite) claim(ctx context.Context, spec claimSpec) (claimed, error) {
	now := time.Now()
	q := l.q.claim
	if spec.ordered {
		q = l.q.claimOrdered
	}
	var msgs []*Message
	err := l.withTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, spec.owner, formatTime(now.Add(spec.lease)), formatTime(now), spec.n)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var m Message
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
				m.unreadable = fmt.Errorf("outbox: created_at: %w", terr)
			} else {
				m.Headers, m.unreadable = parseHeaders(headers)
			}
			msgs = append(msgs, &m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	// RETURNING does not promise an order.
	slices.SortFunc(msgs, func(a, b *Message) int { return cmp.Compare(a.ID, b.ID) })
	return &liteClaim{l: l, owner: spec.owner, msgs: msgs}, nil
}

// unscannable is the row rows is on, which failed to scan with scanErr,
// as a Message with only its id, its attempt and why it is unreadable.
func unscannable(rows *sql.Rows, scanErr error) (Message, error) {
	var m Message
	var skip any
	dest := []any{&m.ID, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip}
	if err := rows.Scan(dest...); err != nil {
		return m, scanErr
	}
	m.unreadable = fmt.Errorf("outbox: reading the row: %w", scanErr)
	m.Attempt = 1
	return m, nil
}

// liteClaim is a lease on rows; finish records the outcomes of the rows
// whose lease this relay still holds.
type liteClaim struct {
	l     *Lite
	owner string
	msgs  []*Message
}

func (c *liteClaim) messages() []*Message { return c.msgs }

func (c *liteClaim) finish(ctx context.Context, outs []outcome) error {
	if len(c.msgs) == 0 {
		return nil
	}
	now := time.Now()
	return c.l.withTx(ctx, func(tx *sql.Tx) error {
		for i, o := range outs {
			var args []any
			q := c.l.q.release
			switch o.kind {
			case sentOK:
				q, args = c.l.q.sent, []any{formatTime(now), []byte(o.receipt)}
				if o.receipt == nil {
					args[1] = nil
				}
			case retryLater:
				q, args = c.l.q.retry, []any{o.err, formatTime(now.Add(o.delay))}
			case failedForGood:
				q, args = c.l.q.failed, []any{o.err, formatTime(now)}
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

func (l *Lite) withTx(ctx context.Context, fn func(*sql.Tx) error) error {
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
func (l *Lite) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	var oldest sql.NullString
	err := l.db.QueryRowContext(ctx, l.q.stats).Scan(&s.Unsent, &s.Retrying, &oldest, &s.Failed, &s.Sent)
	if err == nil && oldest.Valid {
		s.OldestUnsent, err = parseTime(oldest.String)
	}
	return s, err
}

// ListFailed returns up to limit rows that failed for good, newest first.
func (l *Lite) ListFailed(ctx context.Context, limit int) ([]FailedRow, error) {
	if err := validateLimit(limit); err != nil {
		return nil, err
	}
	rows, err := l.db.QueryContext(ctx, l.q.listFailed, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FailedRow
	for rows.Next() {
		var r FailedRow
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
func (l *Lite) Replay(ctx context.Context, id int64) (bool, error) {
	res, err := l.db.ExecContext(ctx, l.q.replay, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// PurgeSent deletes up to limit rows sent before olderThan, oldest first.
func (l *Lite) PurgeSent(ctx context.Context, olderThan time.Time, limit int) (int64, error) {
	if err := validateLimit(limit); err != nil {
		return 0, err
	}
	if olderThan.IsZero() {
		return 0, errors.New("outbox: PurgeSent: olderThan is zero")
	}
	res, err := l.db.ExecContext(ctx, l.q.purge, formatTime(olderThan), limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// SentBefore counts the rows sent before olderThan.
func (l *Lite) SentBefore(ctx context.Context, olderThan time.Time) (int64, error) {
	var n int64
	err := l.db.QueryRowContext(ctx, l.q.sentBefore, formatTime(olderThan)).Scan(&n)
	return n, err
}
