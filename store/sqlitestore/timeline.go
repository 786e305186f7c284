package sqlitestore

import (
	"context"
	"time"

	"github.com/txinbox/txinbox/store"
)

var _ store.Timeline = (*Driver)(nil)

// OutcomesPerMinute counts the inbox rows, dead letters and drift records
// per scope, source and minute since since. The times are fixed-width
// text, so the minute is the text's first 16 characters and the range
// reads the time indexes.
func (d *Driver) OutcomesPerMinute(ctx context.Context, since time.Time) ([]store.MinuteCount, error) {
	rows, err := d.db.QueryContext(ctx, d.t.Expand(`SELECT scope, source, m, sum(p), sum(dl), sum(dr) FROM (
	SELECT scope, source, substr(received_at, 1, 16) AS m, count(*) AS p, 0 AS dl, 0 AS dr
	  FROM {inbox} WHERE received_at >= ?1 GROUP BY 1, 2, 3
	UNION ALL
	SELECT scope, source, substr(dead_lettered_at, 1, 16), 0, count(*), 0
	  FROM {dead_letters} WHERE dead_lettered_at >= ?1 GROUP BY 1, 2, 3
	UNION ALL
	SELECT scope, source, substr(detected_at, 1, 16), 0, 0, count(*)
	  FROM {drift} WHERE detected_at >= ?1 GROUP BY 1, 2, 3)
GROUP BY 1, 2, 3 ORDER BY 3, 1, 2`), formatTime(since))
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
		if c.Minute, err = time.Parse("2006-01-02T15:04", m); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
