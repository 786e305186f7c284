package pgcore

import (
	"context"
	"time"

	"github.com/txinbox/txinbox/store"
)

// OutcomesPerMinute counts the inbox rows, dead letters and drift records
// per scope, source and minute since since. Each table is read through its
// time index (received_at, dead_lettered_at, detected_at) and grouped on
// its own before the three are merged.
func (c *Core) OutcomesPerMinute(ctx context.Context, since time.Time) ([]store.MinuteCount, error) {
	rows, err := c.db.Query(ctx, c.t.Expand(`SELECT scope, source, m, sum(p)::bigint, sum(dl)::bigint, sum(dr)::bigint FROM (
	SELECT scope, source, date_trunc('minute', received_at) AS m, count(*) AS p, 0 AS dl, 0 AS dr
	  FROM {inbox} WHERE received_at >= $1 GROUP BY 1, 2, 3
	UNION ALL
	SELECT scope, source, date_trunc('minute', dead_lettered_at), 0, count(*), 0
	  FROM {dead_letters} WHERE dead_lettered_at >= $1 GROUP BY 1, 2, 3
	UNION ALL
	SELECT scope, source, date_trunc('minute', detected_at), 0, 0, count(*)
	  FROM {drift} WHERE detected_at >= $1 GROUP BY 1, 2, 3) x
GROUP BY 1, 2, 3 ORDER BY 3, 1, 2`), since)
	var out []store.MinuteCount
	var m store.MinuteCount
	err = ForEach(rows, err, []any{&m.Scope, &m.Source, &m.Minute, &m.Processed, &m.DeadLettered, &m.Drift}, func() error {
		m.Minute = m.Minute.UTC()
		out = append(out, m)
		return nil
	})
	return out, err
}
