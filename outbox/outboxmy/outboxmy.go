// Package outboxmy is the outbox table of a MySQL or MariaDB inbox
// database (store/mysqlstore), for package outbox's Relay: rows added with
// Add in a handler's *sql.Tx, claimed with SELECT ... FOR UPDATE SKIP
// LOCKED (MySQL 8.0, MariaDB 10.6 and later) in a transaction that stays
// open until the batch's outcomes are recorded, as outboxpg does.
package outboxmy

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/internal/table"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
	"github.com/txinbox/txinbox/store/schema"
)

// Store is the outbox table of a MySQL inbox database (mysqlstore).
type Store struct {
	db *sql.DB
	q  queries
}

var (
	_ outbox.Store           = (*Store)(nil)
	_ outbox.AuditedReplayer = (*Store)(nil)
)

// Database is the inbox database New needs: a *mysqlstore.Driver.
type Database interface {
	DB() *sql.DB
	Tables() schema.Tables
}

type queries struct {
	add, claim, claimOrdered, sent, retry, failed, stats, listFailed, replay, purge, sentBefore string
	replayRow, audit                                                                            string
}

// New returns the outbox table of the driver's database; the driver's
// Migrate creates it.
func New(d Database) *Store {
	x := d.Tables().Expand
	cols := "id, scope, message_id, part, source, topic, `key`, content_type, headers, payload, created_at, attempts"
	pending := `sent_at IS NULL AND failed_at IS NULL`
	return &Store{db: d.DB(), q: queries{
		add: x("INSERT INTO {outbox} (scope, message_id, part, source, topic, `key`, content_type, headers, payload, created_at)\n" +
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE id = id"),
		claim: x(`SELECT ` + cols + ` FROM {outbox} o WHERE ` + pending + `
			AND (next_attempt_at IS NULL OR next_attempt_at <= ?)
			ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`),
		claimOrdered: x(`SELECT ` + cols + ` FROM {outbox} o WHERE ` + pending + `
			AND (next_attempt_at IS NULL OR next_attempt_at <= ?)
			AND (o.` + "`key`" + ` = '' OR NOT EXISTS (SELECT 1 FROM {outbox} e
				WHERE e.` + "`key`" + ` = o.` + "`key`" + ` AND e.id < o.id AND e.sent_at IS NULL AND e.failed_at IS NULL))
			ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`),
		sent:   x(`UPDATE {outbox} SET sent_at = ?, receipt = ?, attempts = attempts + 1, next_attempt_at = NULL WHERE id = ?`),
		retry:  x(`UPDATE {outbox} SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?`),
		failed: x(`UPDATE {outbox} SET attempts = attempts + 1, last_error = ?, failed_at = ?, next_attempt_at = NULL WHERE id = ?`),
		stats: x(`SELECT
			(SELECT count(*) FROM {outbox} WHERE ` + pending + `),
			(SELECT count(*) FROM {outbox} WHERE ` + pending + ` AND attempts > 0),
			(SELECT min(created_at) FROM {outbox} WHERE ` + pending + `),
			(SELECT count(*) FROM {outbox} WHERE failed_at IS NOT NULL),
			(SELECT count(*) FROM {outbox} WHERE sent_at IS NOT NULL)`),
		listFailed: x("SELECT id, scope, message_id, part, topic, `key`, attempts, coalesce(last_error, ''), created_at, failed_at\n" +
			"FROM {outbox} WHERE failed_at IS NOT NULL ORDER BY id DESC LIMIT ?"),
		replay: x(`UPDATE {outbox} SET failed_at = NULL, attempts = 0, next_attempt_at = NULL
			WHERE id = ? AND failed_at IS NOT NULL AND sent_at IS NULL`),
		replayRow:  x(`SELECT scope, message_id, part FROM {outbox} WHERE id = ? AND failed_at IS NOT NULL AND sent_at IS NULL FOR UPDATE`),
		audit:      x(`INSERT INTO {audit} (at, actor, action, scope, message_id, reason, detail) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		sentBefore: x(`SELECT count(*) FROM {outbox} WHERE sent_at < ?`),
		purge:      x(`DELETE FROM {outbox} WHERE sent_at IS NOT NULL AND sent_at < ? ORDER BY sent_at LIMIT ?`),
	}}
}

var now = func() string { return mysqlstore.FormatTime(time.Now()) }

// Add writes e to the outbox in tx, the handler's inbox transaction: the
// row exists only if the transaction commits. A second Add of the same
// (Scope, MessageID, Part) is ignored.
func (p *Store) Add(ctx context.Context, tx *sql.Tx, e outbox.Entry) error {
	e, h, err := table.Row(e)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, p.q.add, e.Scope, e.MessageID, e.Part, e.Source, e.Topic, e.Key, e.ContentType, h, e.Payload, now())
	return err
}

// Claim implements outbox.Store: it locks up to spec.N due rows in a
// transaction that stays open until the batch's Finish.
//
// The transaction is not bound to ctx (database/sql would roll it back
// when ctx ends): the sends in flight when a relay stops are recorded by
// Finish, as outboxpg records them.
func (p *Store) Claim(ctx context.Context, spec outbox.ClaimSpec) (outbox.Batch, error) {
	tx, err := p.db.BeginTx(context.WithoutCancel(ctx), &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, err
	}
	q := p.q.claim
	if spec.Ordered {
		q = p.q.claimOrdered
	}
	msgs, err := scanClaim(tx.QueryContext(ctx, q, now(), spec.N))
	if err != nil || len(msgs) == 0 {
		_ = tx.Rollback()
		return &claim{}, err
	}
	return &claim{tx: tx, q: &p.q, msgs: msgs}, nil
}

func scanClaim(rows *sql.Rows, err error) ([]*outbox.Message, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var msgs []*outbox.Message
	for rows.Next() {
		var m outbox.Message
		var headers sql.NullString
		if err := rows.Scan(&m.ID, &m.Scope, &m.MessageID, &m.Part, &m.Source, &m.Topic, &m.Key,
			&m.ContentType, &headers, &m.Payload, mysqlstore.ScanTime(&m.CreatedAt), &m.Attempt); err != nil {
			return nil, err
		}
		m.Attempt++
		if headers.Valid {
			m.Headers, m.Unreadable = outbox.DecodeHeaders([]byte(headers.String))
		}
		if m.Payload == nil {
			m.Payload = []byte{}
		}
		msgs = append(msgs, &m)
	}
	return msgs, rows.Err()
}

// claim holds the claim transaction: the rows stay locked (other relays
// skip them) until Finish commits their outcomes.
type claim struct {
	tx   *sql.Tx
	q    *queries
	msgs []*outbox.Message
}

// Messages implements outbox.Batch.
func (c *claim) Messages() []*outbox.Message { return c.msgs }

// Finish implements outbox.Batch: it records the outcomes and commits,
// which unlocks the rows.
func (c *claim) Finish(ctx context.Context, outs []outbox.Outcome) error {
	if c.tx == nil {
		return nil
	}
	err := c.record(ctx, outs)
	if err == nil {
		err = c.tx.Commit()
	}
	if err != nil {
		_ = c.tx.Rollback()
	}
	return err
}

func (c *claim) record(ctx context.Context, outs []outbox.Outcome) error {
	for i, o := range outs {
		id := c.msgs[i].ID
		var err error
		switch o.Result {
		case outbox.Sent:
			_, err = c.tx.ExecContext(ctx, c.q.sent, now(), []byte(o.Receipt), id)
		case outbox.Retried:
			_, err = c.tx.ExecContext(ctx, c.q.retry, o.Err, mysqlstore.FormatTime(time.Now().Add(o.Delay)), id)
		case outbox.Failed:
			_, err = c.tx.ExecContext(ctx, c.q.failed, o.Err, now(), id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Stats counts the rows by state.
func (p *Store) Stats(ctx context.Context) (outbox.Stats, error) {
	var s outbox.Stats
	err := p.db.QueryRowContext(ctx, p.q.stats).Scan(&s.Unsent, &s.Retrying, mysqlstore.ScanTime(&s.OldestUnsent), &s.Failed, &s.Sent)
	return s, err
}

// ListFailed returns up to limit rows that failed for good, newest first.
func (p *Store) ListFailed(ctx context.Context, limit int) ([]outbox.FailedRow, error) {
	if err := table.ValidateLimit(limit); err != nil {
		return nil, err
	}
	rows, err := p.db.QueryContext(ctx, p.q.listFailed, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []outbox.FailedRow
	for rows.Next() {
		var r outbox.FailedRow
		if err := rows.Scan(&r.ID, &r.Scope, &r.MessageID, &r.Part, &r.Topic, &r.Key, &r.Attempts,
			&r.LastError, mysqlstore.ScanTime(&r.CreatedAt), mysqlstore.ScanTime(&r.FailedAt)); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Replay puts the failed row id back: not failed, attempts 0, due now. It
// reports false when no failed row has that id.
func (p *Store) Replay(ctx context.Context, id int64) (bool, error) {
	r, err := p.db.ExecContext(ctx, p.q.replay, id)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n == 1, err
}

// PurgeSent deletes up to limit rows sent before olderThan, oldest first.
func (p *Store) PurgeSent(ctx context.Context, olderThan time.Time, limit int) (int64, error) {
	if err := table.ValidatePurge(olderThan, limit); err != nil {
		return 0, err
	}
	r, err := p.db.ExecContext(ctx, p.q.purge, mysqlstore.FormatTime(olderThan), limit)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// SentBefore counts the rows sent before olderThan.
func (p *Store) SentBefore(ctx context.Context, olderThan time.Time) (int64, error) {
	var n int64
	err := p.db.QueryRowContext(ctx, p.q.sentBefore, mysqlstore.FormatTime(olderThan)).Scan(&n)
	return n, err
}

// ReplayAudited implements outbox.AuditedReplayer: it puts the failed row
// id back and records the replay in the audit table, in one transaction.
func (p *Store) ReplayAudited(ctx context.Context, id int64, a store.AuditEntry) (bool, error) {
	if err := store.ValidateAudit(a); err != nil {
		return false, err
	}
	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	var scope, messageID string
	var part int
	err = tx.QueryRowContext(ctx, p.q.replayRow, id).Scan(&scope, &messageID, &part)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, p.q.replay, id); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, p.q.audit, now(), a.Actor, outbox.AuditAction, scope, messageID, a.Reason, table.AuditDetail(id, part)); err != nil {
		return false, err
	}
	return true, tx.Commit()
}
