package bench

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/store/mysqlstore"
)

// purgeBench is the purge scenario on MySQL: the batched deletes
// (mysqlstore.Driver.PurgeBatch) only. Dropping time partitions is not
// measured: InnoDB requires every unique key of a partitioned table to
// hold the partition column, so the inbox's (scope, message_id) key
// would no longer be unique across partitions (docs/mysqlstore.md).
func (mb *myBench) purgeBench(ctx context.Context) ([]purgePoint, error) {
	if err := mb.truncate(ctx); err != nil {
		return nil, err
	}
	if _, err := mb.db.ExecContext(ctx, `CREATE TABLE bench_digits (d INT NOT NULL PRIMARY KEY) ENGINE=InnoDB`); err != nil {
		return nil, err
	}
	if _, err := mb.db.ExecContext(ctx, `INSERT INTO bench_digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)`); err != nil {
		return nil, err
	}
	p, err := mb.processor(sql.LevelReadCommitted)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	pt, err := mb.be.purgeRun(ctx, purgeTarget{
		mode:    "rows",
		purger:  mb.driver,
		process: p.Process,
		prefill: mb.prefillExpired,
		clear: func(ctx context.Context) error {
			_, err := mb.db.ExecContext(ctx, "TRUNCATE TABLE effects")
			return err
		},
		counts: func(ctx context.Context) (left, effects, inbox int64, err error) {
			err = mb.db.QueryRowContext(ctx, mb.driver.Tables().Expand(`SELECT (SELECT count(*) FROM {inbox} WHERE scope = 'prefill'),
		(SELECT count(*) FROM effects), (SELECT count(*) FROM {inbox} WHERE scope = 'bench')`)).Scan(&left, &effects, &inbox)
			return left, effects, inbox, err
		},
	})
	if err != nil {
		return nil, fmt.Errorf("purge bench (rows): %w", err)
	}
	return []purgePoint{*pt}, nil
}

// prefillExpired adds the expired rows, received 40 days ago a
// millisecond apart, in statements (and transactions) of one million
// rows, numbered by a cross join of six digit tables (MySQL 8 stops a
// recursive CTE at 1,000 rows by default), then analyzes the table.
func (mb *myBench) prefillExpired(ctx context.Context) error {
	q := mb.driver.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
SELECT 'prefill', CONCAT('InvoiceIssued/', g.n), 'bench', '', '', ?, TIMESTAMPADD(MICROSECOND, g.n * 1000, ?), TIMESTAMPADD(MICROSECOND, g.n * 1000, ?)
FROM (SELECT ? + a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 100000 * h.d AS n
      FROM bench_digits a, bench_digits b, bench_digits c, bench_digits e, bench_digits f, bench_digits h) g
WHERE g.n <= ?`)
	base := mysqlstore.FormatTime(time.Now().Add(-40 * 24 * time.Hour))
	n := mb.be.o.purgeRows
	for lo := int64(1); lo <= n; lo += 1_000_000 {
		hi := min(lo+999_999, n)
		mb.be.progress("purge: filling %d/%d expired rows...", hi, n)
		if _, err := mb.db.ExecContext(ctx, q, benchHash(), base, base, lo, hi); err != nil {
			return fmt.Errorf("filling the inbox: %w", err)
		}
	}
	mb.be.progress("purge: analyzing the %d rows...", n)
	_, err := mb.db.ExecContext(ctx, mb.driver.Tables().Expand(`ANALYZE TABLE {inbox}`))
	return err
}
