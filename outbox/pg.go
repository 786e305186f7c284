package outbox

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/schema"
)

// PG is the outbox table of a PostgreSQL inbox database (pgstore). Its
// rows are claimed with SELECT ... FOR UPDATE SKIP LOCKED in a short
// transaction that also records the outcome of each send, so relays in
// several goroutines and processes share the work and never send the same
// row at the same time.
type PG struct {
	pool *pgxpool.Pool
	q    pgQueries
}

var _ Store = (*PG)(nil)

// PostgreSQLDatabase is the inbox database PostgreSQL needs: a
// *pgstore.Driver (its pool, its schema and table prefix). It is an
// interface so that this package does not link pgstore.
type PostgreSQLDatabase interface {
	Pool() *pgxpool.Pool
	Tables() schema.Tables
}

// PostgreSQL returns the outbox table of the driver's database (a
// *pgstore.Driver: its schema and table prefix). The driver's Migrate
// creates it.
func PostgreSQL(d PostgreSQLDatabase) *PG {
	t := d.Tables()
	x := t.Expand
	cols := `id, scope, message_id, part, source, topic, key, content_type, headers, payload, created_at, attempts`
	pending := `sent_at IS NULL AND failed_at IS NULL`
	return &PG{pool: d.Pool(), q: pgQueries{
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
func (p *PG) Add(ctx context.Context, tx pgx.Tx, e Entry) error {
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
	_, err = tx.Exec(ctx, p.q.add, e.Scope, e.MessageID, e.Part, e.Source, e.Topic, e.Key, e.ContentType, h, e.Payload)
	return err
}

func (p *PG) claim(ctx context.Context, spec claimSpec) (claimed, error) {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	q := p.q.claim
	if spec.ordered {
		q = p.q.claimOrdered
	}
	rows, _ := tx.Query(ctx, q, spec.n)
	var msgs []*Message
	var m Message
	var headers []byte
	_, err = pgx.ForEachRow(rows, []any{&m.ID, &m.Scope, &m.MessageID, &m.Part, &m.Source, &m.Topic, &m.Key,
		&m.ContentType, &headers, &m.Payload, &m.CreatedAt, &m.Attempt}, func() error {
		c := m
		c.Attempt++
		c.Headers, c.unreadable = parseHeaders(headers)
		msgs = append(msgs, &c)
		return nil
	})
	if err != nil || len(msgs) == 0 {
		tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // nothing was written
		return &pgClaim{}, err
	}
	return &pgClaim{tx: tx, q: &p.q, msgs: msgs}, nil
}

// pgClaim holds the claim transaction: the rows stay locked (other relays
// skip them) until finish commits their outcomes.
type pgClaim struct {
	tx   pgx.Tx
	q    *pgQueries
	msgs []*Message
}

func (c *pgClaim) messages() []*Message { return c.msgs }

func (c *pgClaim) finish(ctx context.Context, outs []outcome) error {
	if c.tx == nil {
		return nil
	}
	b := &pgx.Batch{}
	for i, o := range outs {
		id := c.msgs[i].ID
		switch o.kind {
		case sentOK:
			b.Queue(c.q.sent, id, []byte(o.receipt))
		case retryLater:
			b.Queue(c.q.retry, id, o.err, o.delay.Seconds())
		case failedForGood:
			b.Queue(c.q.failed, id, o.err)
		}
	}
	err := c.tx.SendBatch(ctx, b).Close()
	if err == nil {
		err = c.tx.Commit(ctx)
	}
	if err != nil {
		c.tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the error that matters is err
	}
	return err
}

// Stats counts the rows by state.
func (p *PG) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	var oldest *time.Time
	err := p.pool.QueryRow(ctx, p.q.stats).Scan(&s.Unsent, &s.Retrying, &oldest, &s.Failed, &s.Sent)
	if oldest != nil {
		s.OldestUnsent = *oldest
	}
	return s, err
}

// ListFailed returns up to limit rows that failed for good, newest first.
func (p *PG) ListFailed(ctx context.Context, limit int) ([]FailedRow, error) {
	if err := validateLimit(limit); err != nil {
		return nil, err
	}
	rows, _ := p.pool.Query(ctx, p.q.listFailed, limit)
	var out []FailedRow
	var r FailedRow
	_, err := pgx.ForEachRow(rows, []any{&r.ID, &r.Scope, &r.MessageID, &r.Part, &r.Topic, &r.Key, &r.Attempts,
		&r.LastError, &r.CreatedAt, &r.FailedAt}, func() error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// Replay puts the failed row id back: not failed, attempts 0, due now. It
// reports false when no failed row has that id.
func (p *PG) Replay(ctx context.Context, id int64) (bool, error) {
	tag, err := p.pool.Exec(ctx, p.q.replay, id)
	return err == nil && tag.RowsAffected() == 1, err
}

// PurgeSent deletes up to limit rows sent before olderThan, oldest first.
func (p *PG) PurgeSent(ctx context.Context, olderThan time.Time, limit int) (int64, error) {
	if err := validateLimit(limit); err != nil {
		return 0, err
	}
	if olderThan.IsZero() {
		return 0, errors.New("outbox: PurgeSent: olderThan is zero")
	}
	tag, err := p.pool.Exec(ctx, p.q.purge, olderThan, limit)
	return tag.RowsAffected(), err
}

// SentBefore counts the rows sent before olderThan.
func (p *PG) SentBefore(ctx context.Context, olderThan time.Time) (int64, error) {
	var n int64
	err := p.pool.QueryRow(ctx, p.q.sentBefore, olderThan).Scan(&n)
	return n, err
}
