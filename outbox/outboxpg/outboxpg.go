// Package outboxpg is the outbox table of a PostgreSQL inbox database,
// for package outbox's Relay: rows added with Add in a handler's
// transaction (a pgx.Tx on store/pgstore: Store; a *sql.Tx on
// store/pgdbstore: SQLStore), claimed with SELECT ... FOR UPDATE SKIP
// LOCKED. Its SQL is written once (internal/pgseam) for both connection
// libraries. It is a package of its own so that programs on SQLite do not
// link pgx.
package outboxpg

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/pgseam"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/internal/table"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

// Store is the outbox table of a PostgreSQL inbox database on pgx
// (pgstore). Its rows are claimed with SELECT ... FOR UPDATE SKIP LOCKED
// in a short transaction that also records the outcome of each send, so
// relays in several goroutines and processes share the work and never
// send the same row at the same time.
type Store struct{ tbl }

// SQLStore is Store on database/sql (pgdbstore): the same table and SQL,
// rows added in a handler's *sql.Tx.
type SQLStore struct{ tbl }

// tbl is the table's code shared by Store and SQLStore.
type tbl struct {
	db pgseam.DB
	q  pgQueries
}

var (
	_ outbox.Store           = (*Store)(nil)
	_ outbox.AuditedReplayer = (*Store)(nil)
	_ outbox.Store           = (*SQLStore)(nil)
	_ outbox.AuditedReplayer = (*SQLStore)(nil)
)

// Database is the inbox database New needs: a *pgstore.Driver (its pool,
// its schema and table prefix). It is an interface so that this package
// does not link pgstore.
type Database interface {
	Pool() *pgxpool.Pool
	Tables() schema.Tables
}

// New returns the outbox table of the driver's database (a
// *pgstore.Driver: its schema and table prefix). The driver's Migrate
// creates it.
func New(d Database) *Store { return &Store{newTable(pgseam.Pgx(d.Pool()), d.Tables())} }

// SQLDatabase is the inbox database NewSQL needs: a *pgdbstore.Driver
// (its *sql.DB, its schema and table prefix).
type SQLDatabase interface {
	DB() *sql.DB
	Tables() schema.Tables
}

// NewSQL returns the outbox table of a database/sql driver's database (a
// *pgdbstore.Driver, on any PostgreSQL database/sql driver). The driver's
// Migrate creates it.
func NewSQL(d SQLDatabase) *SQLStore { return &SQLStore{newTable(pgseam.SQL(d.DB()), d.Tables())} }

func newTable(db pgseam.DB, t schema.Tables) tbl {
	x := t.Expand
	cols := `id, scope, message_id, part, source, topic, key, content_type, headers, payload, created_at, attempts`
	pending := `sent_at IS NULL AND failed_at IS NULL`
	return tbl{db: db, q: pgQueries{
		add: x(`INSERT INTO {outbox} (scope, message_id, part, source, topic, key, content_type, headers, payload)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9) ON CONFLICT (scope, message_id, part) DO NOTHING`),
		claim: x(`SELECT ` + cols + ` FROM {outbox} o WHERE ` + pending + `
			AND (next_attempt_at IS NULL OR next_attempt_at <= now())
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`),
		// A row is the head of its key when no earlier row of the key
		// is pending (waiting, retrying, or being sent by another
		// relay). Only heads are taken: see claimOrdered.
		claimOrdered: x(`SELECT ` + cols + ` FROM {outbox} o WHERE ` + pending + `
			AND (next_attempt_at IS NULL OR next_attempt_at <= now())
			AND (o.key = '' OR NOT EXISTS (SELECT 1 FROM {outbox} e
				WHERE e.key = o.key AND e.id < o.id AND e.sent_at IS NULL AND e.failed_at IS NULL))
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`),
		sent: x(`UPDATE {outbox} SET sent_at = clock_timestamp(), receipt = $2, attempts = attempts + 1,
			next_attempt_at = NULL WHERE id = $1`),
		retry: x(`UPDATE {outbox} SET attempts = attempts + 1, last_error = $2,
			next_attempt_at = clock_timestamp() + $3::float8 * interval '1 second' WHERE id = $1`),
		failed: x(`UPDATE {outbox} SET attempts = attempts + 1, last_error = $2, failed_at = clock_timestamp(),
			next_attempt_at = NULL WHERE id = $1`),
		stats: x(`SELECT
			(SELECT count(*) FROM {outbox} WHERE ` + pending + `),
			(SELECT count(*) FROM {outbox} WHERE ` + pending + ` AND attempts > 0),
			(SELECT min(created_at) FROM {outbox} WHERE ` + pending + `),
			(SELECT count(*) FROM {outbox} WHERE failed_at IS NOT NULL),
			(SELECT count(*) FROM {outbox} WHERE sent_at IS NOT NULL)`),
		listFailed: x(`SELECT id, scope, message_id, part, topic, key, attempts, coalesce(last_error, ''), created_at, failed_at
			FROM {outbox} WHERE failed_at IS NOT NULL ORDER BY id DESC LIMIT $1`),
		replay: x(`UPDATE {outbox} SET failed_at = NULL, attempts = 0, next_attempt_at = NULL
			WHERE id = $1 AND failed_at IS NOT NULL AND sent_at IS NULL`),
		replayAudited: x(`UPDATE {outbox} SET failed_at = NULL, attempts = 0, next_attempt_at = NULL
			WHERE id = $1 AND failed_at IS NOT NULL AND sent_at IS NULL RETURNING scope, message_id, part`),
		audit:      x(`INSERT INTO {audit} (actor, action, scope, message_id, reason, detail) VALUES ($1, $2, $3, $4, $5, $6)`),
		sentBefore: x(`SELECT count(*) FROM {outbox} WHERE sent_at < $1`),
		purge: x(`DELETE FROM {outbox} WHERE id = ANY(ARRAY(SELECT id FROM {outbox}
			WHERE sent_at IS NOT NULL AND sent_at < $1 ORDER BY sent_at LIMIT $2))`),
	}}
}

type pgQueries struct {
	add, claim, claimOrdered, sent, retry, failed, stats, listFailed, replay, purge, sentBefore string
	replayAudited, audit                                                                        string
}

// Add writes e to the outbox in tx, the handler's inbox transaction: the
// row exists only if the transaction commits. A second Add of the same
// (Scope, MessageID, Part) is ignored.
func (p *Store) Add(ctx context.Context, tx pgx.Tx, e outbox.Entry) error {
	return p.add(ctx, pgseam.PgxTx(tx), e)
}

// Add writes e to the outbox in tx, the handler's inbox transaction (a
// *sql.Tx of pgdbstore's): the row exists only if the transaction
// commits. A second Add of the same (Scope, MessageID, Part) is ignored.
func (p *SQLStore) Add(ctx context.Context, tx *sql.Tx, e outbox.Entry) error {
	return p.add(ctx, pgseam.SQLTx(tx), e)
}

func (p *tbl) add(ctx context.Context, q pgseam.Querier, e outbox.Entry) error {
	e, h, err := table.Row(e)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, p.q.add, e.Scope, e.MessageID, e.Part, e.Source, e.Topic, e.Key, e.ContentType, h, e.Payload)
	return err
}

// Claim implements outbox.Store: it locks up to spec.N due rows in a
// transaction that stays open until the batch's Finish.
func (p *tbl) Claim(ctx context.Context, spec outbox.ClaimSpec) (outbox.Batch, error) {
	tx, err := p.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	q := p.q.claim
	if spec.Ordered {
		q = p.q.claimOrdered
	}
	var msgs []*outbox.Message
	var m outbox.Message
	var headers []byte
	err = forEachRow(ctx, tx, q, []any{spec.N}, []any{&m.ID, &m.Scope, &m.MessageID, &m.Part, &m.Source, &m.Topic, &m.Key,
		&m.ContentType, &headers, &m.Payload, &m.CreatedAt, &m.Attempt}, func() {
		c := m
		c.Attempt++
		c.Headers, c.Unreadable = outbox.DecodeHeaders(headers)
		msgs = append(msgs, &c)
	})
	if err != nil || len(msgs) == 0 {
		tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // nothing was written
		return &pgClaim{}, err
	}
	return &pgClaim{tx: tx, q: &p.q, msgs: msgs}, nil
}

// forEachRow runs sql and calls fn after scanning each row into dest.
func forEachRow(ctx context.Context, q pgseam.Querier, sql string, args, dest []any, fn func()) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		fn()
	}
	rows.Close()
	return rows.Err()
}

// pgClaim holds the claim transaction: the rows stay locked (other relays
// skip them) until Finish commits their outcomes.
type pgClaim struct {
	tx   pgseam.Tx
	q    *pgQueries
	msgs []*outbox.Message
}

// Messages implements outbox.Batch.
func (c *pgClaim) Messages() []*outbox.Message { return c.msgs }

// Finish implements outbox.Batch: it records the outcomes and commits,
// which unlocks the rows.
func (c *pgClaim) Finish(ctx context.Context, outs []outbox.Outcome) error {
	if c.tx == nil {
		return nil
	}
	var stmts []pgseam.Stmt
	for i, o := range outs {
		id := c.msgs[i].ID
		switch o.Result {
		case outbox.Sent:
			stmts = append(stmts, pgseam.Stmt{SQL: c.q.sent, Args: []any{id, []byte(o.Receipt)}})
		case outbox.Retried:
			stmts = append(stmts, pgseam.Stmt{SQL: c.q.retry, Args: []any{id, o.Err, o.Delay.Seconds()}})
		case outbox.Failed:
			stmts = append(stmts, pgseam.Stmt{SQL: c.q.failed, Args: []any{id, o.Err}})
		}
	}
	err := c.tx.ExecAll(ctx, stmts)
	if err == nil {
		err = c.tx.Commit(ctx)
	}
	if err != nil {
		c.tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the error that matters is err
	}
	return err
}

// Stats counts the rows by state.
func (p *tbl) Stats(ctx context.Context) (outbox.Stats, error) {
	var s outbox.Stats
	var oldest *time.Time
	err := pgseam.QueryRow(ctx, p.db, p.q.stats, nil, &s.Unsent, &s.Retrying, &oldest, &s.Failed, &s.Sent)
	if oldest != nil {
		s.OldestUnsent = *oldest
	}
	return s, err
}

// ListFailed returns up to limit rows that failed for good, newest first.
func (p *tbl) ListFailed(ctx context.Context, limit int) ([]outbox.FailedRow, error) {
	if err := table.ValidateLimit(limit); err != nil {
		return nil, err
	}
	var out []outbox.FailedRow
	var r outbox.FailedRow
	err := forEachRow(ctx, p.db, p.q.listFailed, []any{limit}, []any{&r.ID, &r.Scope, &r.MessageID, &r.Part, &r.Topic, &r.Key,
		&r.Attempts, &r.LastError, &r.CreatedAt, &r.FailedAt}, func() { out = append(out, r) })
	return out, err
}

// Replay puts the failed row id back: not failed, attempts 0, due now. It
// reports false when no failed row has that id.
func (p *tbl) Replay(ctx context.Context, id int64) (bool, error) {
	n, err := p.db.Exec(ctx, p.q.replay, id)
	return err == nil && n == 1, err
}

// PurgeSent deletes up to limit rows sent before olderThan, oldest first.
func (p *tbl) PurgeSent(ctx context.Context, olderThan time.Time, limit int) (int64, error) {
	if err := table.ValidatePurge(olderThan, limit); err != nil {
		return 0, err
	}
	return p.db.Exec(ctx, p.q.purge, olderThan, limit)
}

// SentBefore counts the rows sent before olderThan.
func (p *tbl) SentBefore(ctx context.Context, olderThan time.Time) (int64, error) {
	var n int64
	err := pgseam.QueryRow(ctx, p.db, p.q.sentBefore, []any{olderThan}, &n)
	return n, err
}

// ReplayAudited implements outbox.AuditedReplayer: it puts the failed row
// id back and records the replay in the audit table, in one transaction.
func (p *tbl) ReplayAudited(ctx context.Context, id int64, a store.AuditEntry) (bool, error) {
	if err := store.ValidateAudit(a); err != nil {
		return false, err
	}
	ok := false
	err := pgseam.InTx(ctx, p.db, func(tx pgseam.Querier) error {
		var scope, messageID string
		var part int
		err := pgseam.QueryRow(ctx, tx, p.q.replayAudited, []any{id}, &scope, &messageID, &part)
		if errors.Is(err, pgseam.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		_, err = tx.Exec(ctx, p.q.audit, a.Actor, outbox.AuditAction, scope, messageID, a.Reason, table.AuditDetail(id, part))
		return err
	})
	return ok, err
}
