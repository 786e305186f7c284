package pgcore

import (
	"context"
	"strconv"
	"time"

	"embed"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// partitionedFS holds the DDL of the partitioned layout, applied by the
// first Migrate of a store with Options.Partitioned (see partition.go).
//
//go:embed partitioned/*.sql
var partitionedFS embed.FS

// Migrate applies the embedded migrations that are not applied yet. It
// holds a transaction-scoped advisory lock, so two processes migrating at
// once take turns and the second finds nothing left to do.
func (c *Core) Migrate(ctx context.Context) error {
	ms, err := schema.Load(schema.Sub(migrationFS, "migrations"), c.t)
	if err != nil {
		return err
	}
	err = c.db.InTx(ctx, func(tx Querier) error {
		// The lock names the schema the tables will land in, so migrations
		// of other schemas or prefixes do not wait for each other.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(
			'txinbox.migrate.' || coalesce(nullif($1::text, ''), current_schema(), '') || '.' || $2::text, 0))`, c.opts.Schema, c.t.Prefix); err != nil {
			return err
		}
		if c.opts.Schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS "`+c.opts.Schema+`"`); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, c.t.Expand(`CREATE TABLE IF NOT EXISTS {migrations} (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)); err != nil {
			return err
		}
		applied := map[int]bool{}
		rows, err := tx.Query(ctx, c.t.Expand(`SELECT version FROM {migrations}`))
		var v int
		if err := ForEach(rows, err, []any{&v}, func() error { applied[v] = true; return nil }); err != nil {
			return err
		}
		if c.opts.Partitioned && applied[1] {
			if err := c.checkLayoutOption(ctx, tx); err != nil {
				return err
			}
		}
		for _, m := range ms {
			if applied[m.Version] {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return c.errf("migration %03d_%s: %w", m.Version, m.Name, err)
			}
			if m.Version == 1 && c.opts.Partitioned {
				// The plain table was created by this very transaction,
				// so it is empty: replace it by the partitioned layout.
				if err := c.migratePartitioned(ctx, tx); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, c.t.Expand(`INSERT INTO {migrations} (version, name) VALUES ($1, $2)`), m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
	c.layout.Store(nil) // detect the layout again
	return err
}

// Stats counts the rows of each inbox table.
func (c *Core) Stats(ctx context.Context) (store.Stats, error) {
	var s store.Stats
	var oldest *time.Time
	_, err := QueryRow(ctx, c.db, c.t.Expand(`SELECT
		(SELECT count(*) FROM {inbox}), (SELECT count(*) FROM {attempts}),
		(SELECT count(*) FROM {dead_letters}), (SELECT count(*) FROM {drift}),
		(SELECT min(received_at) FROM {inbox})`), nil, &s.Inbox, &s.Attempts, &s.DeadLetters, &s.Drift, &oldest)
	if oldest != nil {
		s.OldestInbox = *oldest
	}
	return s, err
}

// ListDrift returns drift records, newest first, paged by id.
func (c *Core) ListDrift(ctx context.Context, f store.ListFilter) ([]store.DriftRecord, error) {
	w := pgWhere()
	w.ListFilter(f, "detected_at", false)
	rows, err := c.db.Query(ctx, c.t.Expand(`SELECT id, scope, message_id, source, source_position, stored_hash, received_hash, detected_at
		FROM {drift} WHERE `+w.String()+` ORDER BY id DESC LIMIT `+strconv.Itoa(limit(f))), w.Args...)
	var out []store.DriftRecord
	var r store.DriftRecord
	err = ForEach(rows, err, []any{&r.ID, &r.Scope, &r.MessageID, &r.Source, &r.SourcePosition,
		&r.StoredHash, &r.ReceivedHash, &r.DetectedAt}, func() error {
		out = append(out, r)
		r = store.DriftRecord{}
		return nil
	})
	return out, err
}

// ListDeadLetters returns dead letters, newest first, paged by id: a page
// walks the primary key backwards from f.Before, at any depth.
func (c *Core) ListDeadLetters(ctx context.Context, f store.ListFilter) ([]store.DeadLetterRecord, error) {
	query, args := c.listDeadLettersSQL(f)
	return c.scanDeadLetters(ctx, c.db, query, args...)
}

// listDeadLettersSQL is the query of ListDeadLetters (its test explains it).
func (c *Core) listDeadLettersSQL(f store.ListFilter) (string, []any) {
	w := pgWhere()
	w.ListFilter(f, "dead_lettered_at", true)
	return c.deadLettersSQL(!f.OmitPayload, w.String()+` ORDER BY id DESC LIMIT `+strconv.Itoa(limit(f))), w.Args
}

func pgWhere() *schema.Where {
	return &schema.Where{Placeholder: func(n int) string { return "$" + strconv.Itoa(n) }}
}

// queryDeadLetters selects dead letters WHERE where.
func (c *Core) queryDeadLetters(ctx context.Context, q Querier, where string, args ...any) ([]store.DeadLetterRecord, error) {
	return c.scanDeadLetters(ctx, q, c.deadLettersSQL(true, where), args...)
}

// deadLettersSQL selects dead letters WHERE where, with their payloads or
// without.
func (c *Core) deadLettersSQL(payload bool, where string) string {
	payloadCol := "payload"
	if !payload {
		payloadCol = "''::bytea"
	}
	return c.t.Expand(`SELECT id, scope, message_id, source, source_position, partition_key,
		` + payloadCol + `, payload_hash, headers::text, attempts, reason, last_error, received_at, dead_lettered_at, dropped_at
		FROM {dead_letters} WHERE ` + where)
}

// scanDeadLetters runs a query of deadLettersSQL.
func (c *Core) scanDeadLetters(ctx context.Context, q Querier, query string, args ...any) ([]store.DeadLetterRecord, error) {
	rows, err := q.Query(ctx, query, args...)
	var out []store.DeadLetterRecord
	var r store.DeadLetterRecord
	var headers string
	var dropped *time.Time
	err = ForEach(rows, err, []any{&r.ID, &r.Scope, &r.MessageID, &r.Source, &r.SourcePosition, &r.PartitionKey,
		&r.Payload, &r.PayloadHash, &headers, &r.Attempts, &r.Reason, &r.LastError, &r.ReceivedAt, &r.DeadLetteredAt, &dropped}, func() error {
		r.HeadersJSON = []byte(headers)
		if dropped != nil {
			r.DroppedAt = *dropped
		}
		out = append(out, r)
		r, dropped = store.DeadLetterRecord{}, nil
		return nil
	})
	return out, err
}

func limit(f store.ListFilter) int {
	if f.Limit <= 0 {
		return 100
	}
	return f.Limit
}

// ScopeStats counts per scope (a scan of the tables): see store.ScopeStats.
func (c *Core) ScopeStats(ctx context.Context, expiredBefore time.Time) ([]store.ScopeStats, error) {
	rows, err := c.db.Query(ctx, c.t.Expand(`WITH s AS (
	SELECT scope FROM {inbox} UNION SELECT scope FROM {attempts} UNION SELECT scope FROM {dead_letters} UNION SELECT scope FROM {drift}),
i AS (SELECT scope, count(*) AS n, count(*) FILTER (WHERE received_at < $1) AS expired, min(received_at) AS oldest FROM {inbox} GROUP BY scope),
a AS (SELECT scope, count(*) AS n FROM {attempts} x WHERE NOT EXISTS (SELECT 1 FROM {inbox} y WHERE y.scope = x.scope AND y.message_id = x.message_id) AND NOT EXISTS (SELECT 1 FROM {dead_letters} z WHERE z.scope = x.scope AND z.message_id = x.message_id AND z.message_id <> '') GROUP BY scope),
d AS (SELECT scope, count(*) AS n FROM {dead_letters} WHERE dropped_at IS NULL GROUP BY scope),
f AS (SELECT scope, count(*) AS n FROM {drift} GROUP BY scope)
SELECT s.scope, coalesce(i.n, 0), coalesce(i.expired, 0), i.oldest, coalesce(a.n, 0), coalesce(d.n, 0), coalesce(f.n, 0)
FROM s LEFT JOIN i USING (scope) LEFT JOIN a USING (scope) LEFT JOIN d USING (scope) LEFT JOIN f USING (scope)
ORDER BY s.scope
`), expiredBefore)
	var out []store.ScopeStats
	var s store.ScopeStats
	var oldest *time.Time
	err = ForEach(rows, err, []any{&s.Scope, &s.Inbox, &s.Expired, &oldest, &s.Attempts, &s.DeadLetters, &s.Drift}, func() error {
		if oldest != nil {
			s.OldestInbox = *oldest
		}
		out = append(out, s)
		s, oldest = store.ScopeStats{}, nil
		return nil
	})
	return out, err
}

// InboxGauges reads the inbox figures for a metrics scrape: the row count
// (the planner's estimate, summed over the partitions, once it passes
// store.GaugeExactBelow), the rows received before cutoff and the oldest
// received_at, both from the received_at index.
func (c *Core) InboxGauges(ctx context.Context, cutoff time.Time) (store.InboxGauges, error) {
	var g store.InboxGauges
	var oldest *time.Time
	_, err := QueryRow(ctx, c.db, c.t.Expand(`SELECT
		(SELECT coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint FROM pg_class c
		  WHERE c.oid = $1::text::regclass OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = $1::text::regclass)),
		(SELECT count(*) FROM {inbox} WHERE received_at < $2),
		(SELECT min(received_at) FROM {inbox})`), []any{c.t.Inbox, cutoff}, &g.Rows, &g.Expired, &oldest)
	if err != nil {
		return g, err
	}
	if oldest != nil {
		g.OldestReceived = *oldest
	}
	g.RowsEstimated = g.Rows >= store.GaugeExactBelow
	if !g.RowsEstimated {
		_, err = QueryRow(ctx, c.db, c.t.Expand(`SELECT count(*) FROM {inbox}`), nil, &g.Rows)
	}
	return g, err
}
