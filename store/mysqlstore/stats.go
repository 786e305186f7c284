package mysqlstore

import (
	"context"
	"time"

	"github.com/txinbox/txinbox/store"
)

// ScopeStats counts per scope (a scan of the tables). A message counts
// under Attempts only while it is being retried: neither processed nor
// dead-lettered.
func (d *Driver) ScopeStats(ctx context.Context, expiredBefore time.Time) ([]store.ScopeStats, error) {
	rows, err := d.db.QueryContext(ctx, d.t.Expand(`WITH s AS (
	SELECT scope FROM {inbox} UNION SELECT scope FROM {attempts} UNION SELECT scope FROM {dead_letters} UNION SELECT scope FROM {drift}),
i AS (SELECT scope, count(*) AS n, coalesce(sum(received_at < ?), 0) AS expired, min(received_at) AS oldest FROM {inbox} GROUP BY scope),
a AS (SELECT scope, count(*) AS n FROM {attempts} x WHERE NOT EXISTS (SELECT 1 FROM {inbox} y WHERE y.scope = x.scope AND y.message_id = x.message_id)
	AND NOT EXISTS (SELECT 1 FROM {dead_letters} z WHERE z.scope = x.scope AND z.key_id = x.message_id) GROUP BY scope),
dl AS (SELECT scope, count(*) AS n FROM {dead_letters} WHERE dropped_at IS NULL GROUP BY scope),
f AS (SELECT scope, count(*) AS n FROM {drift} GROUP BY scope)
SELECT s.scope, coalesce(i.n, 0), coalesce(i.expired, 0), i.oldest, coalesce(a.n, 0), coalesce(dl.n, 0), coalesce(f.n, 0)
FROM s LEFT JOIN i USING (scope) LEFT JOIN a USING (scope) LEFT JOIN dl USING (scope) LEFT JOIN f USING (scope)
ORDER BY s.scope`), formatTime(expiredBefore))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ScopeStats
	for rows.Next() {
		var s store.ScopeStats
		if err := rows.Scan(&s.Scope, &s.Inbox, &s.Expired, at(&s.OldestInbox), &s.Attempts, &s.DeadLetters, &s.Drift); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// InboxGauges reads the inbox figures for a metrics scrape: the row count
// (InnoDB's estimate, information_schema.TABLES.TABLE_ROWS, once it
// passes store.GaugeExactBelow), the rows received before cutoff and the
// oldest received_at, both from the received_at index.
func (d *Driver) InboxGauges(ctx context.Context, cutoff time.Time) (store.InboxGauges, error) {
	var g store.InboxGauges
	err := d.db.QueryRowContext(ctx, d.t.Expand(`SELECT
		coalesce((SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?), 0),
		(SELECT count(*) FROM {inbox} WHERE received_at < ?), (SELECT min(received_at) FROM {inbox})`),
		d.t.Prefix+"inbox", formatTime(cutoff)).Scan(&g.Rows, &g.Expired, at(&g.OldestReceived))
	if err != nil {
		return g, err
	}
	g.RowsEstimated = g.Rows >= store.GaugeExactBelow
	if !g.RowsEstimated {
		err = d.db.QueryRowContext(ctx, d.t.Expand(`SELECT count(*) FROM {inbox}`)).Scan(&g.Rows)
	}
	return g, err
}

// OutcomesPerMinute counts the inbox rows, dead letters and drift records
// per scope, source and minute since since, through the time indexes.
func (d *Driver) OutcomesPerMinute(ctx context.Context, since time.Time) ([]store.MinuteCount, error) {
	s := formatTime(since)
	rows, err := d.db.QueryContext(ctx, d.t.Expand(`SELECT scope, source, m, sum(p), sum(dl), sum(dr) FROM (
	SELECT scope, source, DATE_FORMAT(received_at, '%Y-%m-%d %H:%i') AS m, count(*) AS p, 0 AS dl, 0 AS dr
	  FROM {inbox} WHERE received_at >= ? GROUP BY 1, 2, 3
	UNION ALL
	SELECT scope, source, DATE_FORMAT(dead_lettered_at, '%Y-%m-%d %H:%i'), 0, count(*), 0
	  FROM {dead_letters} WHERE dead_lettered_at >= ? GROUP BY 1, 2, 3
	UNION ALL
	SELECT scope, source, DATE_FORMAT(detected_at, '%Y-%m-%d %H:%i'), 0, 0, count(*)
	  FROM {drift} WHERE detected_at >= ? GROUP BY 1, 2, 3) AS u
GROUP BY 1, 2, 3 ORDER BY 3, 1, 2`), s, s, s)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.MinuteCount
	for rows.Next() {
		var c store.MinuteCount
		var m string
		if err := rows.Scan(&c.Scope, &c.Source, &m, &c.Processed, &c.DeadLettered, &c.Drift); err != nil {
			return nil, err
		}
		if c.Minute, err = time.Parse("2006-01-02 15:04", m); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
