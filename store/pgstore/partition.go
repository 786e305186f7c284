package pgstore

// The partitioned layout (Options.Partitioned).
//
// The inbox is PARTITION BY LIST (period): every period (a number, one row
// of the periods table) has a partition, and claims insert into the
// current period's partition. PostgreSQL cannot enforce a unique key
// across partitions unless it contains the partition key, so the primary
// key is (scope, message_id, period) and the claim adds the rest: a key is
// inserted only if no older partition holds it.
//
// The race that this must close: transaction A claims key K in period 1
// and has not committed; the period switches to 2; transaction B claims K
// in period 2. B's probe of partition 1 does not see A's uncommitted row,
// and B's insert into partition 2 does not conflict with A's row in
// partition 1: both commit, K runs twice. The period lock prevents it:
//
//   - every batch transaction takes pg_advisory_xact_lock_shared(period
//     lock) as its first statement, and reads the current period in a later
//     statement (so with a snapshot taken after the lock was granted);
//   - a switch takes the same lock exclusively. It is granted only when no
//     batch transaction holds it, that is when every transaction that could
//     have inserted into the old period has committed or rolled back, and
//     new batch transactions queue behind it until it commits.
//
// So, once a transaction reads period 2, every row of periods 1 and below
// is either committed (its probe sees it) or was rolled back (and no
// longer matters). Two transactions of the same period conflict on that
// partition's unique index, exactly like the plain layout. A switch makes
// new batches wait for the longest batch in flight, once per period; it
// gives up after switchLockTimeout and is retried by the next purge.
//
// The purge drops the partitions of periods that ended before the
// retention: ALTER TABLE ... DETACH PARTITION ... CONCURRENTLY (SHARE UPDATE
// EXCLUSIVE on the inbox, which inserts and selects do not wait for) and a
// DROP TABLE of the detached table, which no query uses any more.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// ErrNotPartitioned is returned by the partition methods of a Driver whose
// inbox table is not partitioned.
var ErrNotPartitioned = errors.New("pgstore: the inbox table is not partitioned (migrate with Options.Partitioned)")

// ErrPeriodSwitchBusy is returned by RotatePeriod when batch transactions
// held the period lock longer than the switch may make new batches wait;
// the next call tries again.
var ErrPeriodSwitchBusy = errors.New("pgstore: period switch gave up waiting for in-flight batch transactions")

// switchLockTimeout bounds how long a period switch waits for in-flight
// batch transactions, which is also how long new batches can wait for the
// switch.
const switchLockTimeout = "1s"

// lockPeriodShared is the first statement of every batch transaction of
// the partitioned layout.
const lockPeriodShared = `SELECT pg_advisory_xact_lock_shared($1)`

// layout is what the driver learnt about the inbox table.
type layout struct {
	partitioned bool
	periodLock  int64 // advisory lock key of period switches
	ddlLock     int64 // advisory lock key of partition creation
}

// layoutOf detects the layout once the inbox table exists: drivers opened
// without Options.Partitioned on a partitioned inbox use it as such.
func (d *Driver) layoutOf(ctx context.Context) (*layout, error) {
	if l := d.layout.Load(); l != nil {
		return l, nil
	}
	var kind *string
	l := &layout{}
	err := d.pool.QueryRow(ctx, `SELECT (SELECT relkind::text FROM pg_class WHERE oid = to_regclass($3)), k,
		hashtextextended('txinbox.partitions.' || s, 0)
		FROM (SELECT coalesce(nullif($1, ''), current_schema(), '') || '.' || $2 AS s) n,
		LATERAL (SELECT hashtextextended('txinbox.period.' || n.s, 0) AS k) p`,
		d.schema, d.t.Prefix, d.t.Inbox).Scan(&kind, &l.periodLock, &l.ddlLock)
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the layout of %s: %w", d.t.Inbox, err)
	}
	l.partitioned = kind != nil && *kind == "p"
	if kind != nil { // not created yet: detect again next time
		d.layout.Store(l)
	}
	return l, nil
}

// Partitioned reports whether the inbox table is partitioned by period.
func (d *Driver) Partitioned(ctx context.Context) (bool, error) {
	l, err := d.layoutOf(ctx)
	if err != nil {
		return false, err
	}
	return l.partitioned, nil
}

func (d *Driver) partitionName(period int64) string {
	return pgsql.Qualify(d.schema, d.t.Prefix+"inbox_p"+strconv.FormatInt(period, 10))
}

// expandP expands the table placeholders and {periods}.
func (d *Driver) expandP(sql string) string {
	return strings.ReplaceAll(d.t.Expand(sql), "{periods}", d.periods)
}

// migratePartitioned runs in Migrate's transaction right after migration
// 001 created the plain inbox: it replaces it by the partitioned one, with
// period 1 current and the partitions of periods 1 and 2.
func (d *Driver) migratePartitioned(ctx context.Context, tx pgx.Tx) error {
	ddl, err := fs.ReadFile(partitionedFS, "partitioned/inbox.sql")
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, d.expandP(string(ddl))); err != nil {
		return fmt.Errorf("pgstore: partitioned inbox: %w", err)
	}
	if _, err := tx.Exec(ctx, d.expandP(`INSERT INTO {periods} (period, length) VALUES (1, $1::bigint * interval '1 microsecond')`),
		d.opts.PartitionPeriod.Microseconds()); err != nil {
		return err
	}
	for p := int64(1); p <= 2; p++ {
		if _, err := tx.Exec(ctx, d.t.Expand(`CREATE TABLE `+d.partitionName(p)+` PARTITION OF {inbox} FOR VALUES IN (`+
			strconv.FormatInt(p, 10)+`)`)); err != nil {
			return fmt.Errorf("pgstore: partition of period %d: %w", p, err)
		}
	}
	return nil
}

// checkLayoutOption refuses Options.Partitioned on an existing plain inbox:
// the layout is chosen when the table is created.
func (d *Driver) checkLayoutOption(ctx context.Context, tx pgx.Tx) error {
	var kind *string
	if err := tx.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)`, d.t.Inbox).Scan(&kind); err != nil {
		return err
	}
	if kind != nil && *kind != "p" {
		return fmt.Errorf("pgstore: Options.Partitioned: the inbox table %s already exists unpartitioned; "+
			"the layout is chosen by the first migrate (create a new schema or prefix, or drop the empty table)", d.t.Inbox)
	}
	return nil
}

// RotatePeriod starts the next period when the current one has lasted its
// length, or at once with force, and makes sure the partition of the
// period after it exists. It returns the current period afterwards and
// whether this call switched. Switching takes the period lock exclusively
// (see the top of partition.go): new batches wait for it at most about
// 1 s, after which it gives up with ErrPeriodSwitchBusy.
func (d *Driver) RotatePeriod(ctx context.Context, force bool) (period int64, switched bool, err error) {
	l, err := d.layoutOf(ctx)
	if err != nil {
		return 0, false, err
	}
	if !l.partitioned {
		return 0, false, ErrNotPartitioned
	}
	var due bool
	if err := d.pool.QueryRow(ctx, d.expandP(`SELECT period, now() >= started_at + length FROM {periods} WHERE ended_at IS NULL`)).
		Scan(&period, &due); err != nil {
		return 0, false, fmt.Errorf("pgstore: reading the current period: %w", err)
	}
	// The next partition is attached outside the switch, so the switch
	// itself is two row updates.
	if err := d.ensurePartition(ctx, l, period+1); err != nil || (!due && !force) {
		return period, false, err
	}
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+switchLockTimeout+`'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, l.periodLock); err != nil {
			return err
		}
		// Another process may have switched meanwhile.
		var cur int64
		if err := tx.QueryRow(ctx, d.expandP(`SELECT period, now() >= started_at + length FROM {periods} WHERE ended_at IS NULL FOR UPDATE`)).
			Scan(&cur, &due); err != nil {
			return err
		}
		if cur != period || (!due && !force) {
			period = cur
			return nil
		}
		if _, err := tx.Exec(ctx, d.expandP(`UPDATE {periods} SET ended_at = now() WHERE period = $1`), cur); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, d.expandP(`INSERT INTO {periods} (period, started_at, length)
			SELECT period + 1, now(), length FROM {periods} WHERE period = $1`), cur); err != nil {
			return err
		}
		period, switched = cur+1, true
		return nil
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
		return period, false, ErrPeriodSwitchBusy
	}
	if err != nil {
		return period, false, fmt.Errorf("pgstore: switching period: %w", err)
	}
	return period, switched, d.ensurePartition(ctx, l, period+1)
}

// ensurePartition creates the partition of period if it is missing, as a
// table of its own attached afterwards: CREATE TABLE ... PARTITION OF
// would lock the inbox ACCESS EXCLUSIVE, ATTACH PARTITION takes only SHARE
// UPDATE EXCLUSIVE, which inserts and selects do not wait for.
func (d *Driver) ensurePartition(ctx context.Context, l *layout, period int64) error {
	name := d.partitionName(period)
	var exists bool
	if err := d.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil || exists {
		return err
	}
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, l.ddlLock); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil || exists {
			return err
		}
		p := strconv.FormatInt(period, 10)
		_, err := tx.Exec(ctx, d.t.Expand(`CREATE TABLE `+name+` (LIKE {inbox} INCLUDING DEFAULTS);
			ALTER TABLE {inbox} ATTACH PARTITION `+name+` FOR VALUES IN (`+p+`)`))
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: creating the partition of period %d: %w", period, err)
	}
	return nil
}

// DropExpiredPartitions detaches and drops the partitions of every period
// that ended before before, oldest first, and returns how many it dropped
// and the rows they held: the planner's count (pg_class.reltuples) for a
// partition that autovacuum or ANALYZE has seen, which is an estimate, else
// an exact count. Each partition goes in two short steps that never
// make the hot path wait: DETACH PARTITION CONCURRENTLY, then DROP TABLE.
// A detach interrupted earlier is finished (FINALIZE).
func (d *Driver) DropExpiredPartitions(ctx context.Context, before time.Time) (partitions int, rows int64, err error) {
	l, err := d.layoutOf(ctx)
	if err != nil {
		return 0, 0, err
	}
	if !l.partitioned {
		return 0, 0, ErrNotPartitioned
	}
	qr, _ := d.pool.Query(ctx, d.expandP(`SELECT period FROM {periods}
		WHERE ended_at < $1 AND dropped_at IS NULL ORDER BY period`), before)
	periods, err := pgx.CollectRows(qr, pgx.RowTo[int64])
	if err != nil {
		return 0, 0, fmt.Errorf("pgstore: listing expired periods: %w", err)
	}
	for _, p := range periods {
		n, err := d.dropPartition(ctx, p)
		if err != nil {
			return partitions, rows, fmt.Errorf("pgstore: dropping the partition of period %d: %w", p, err)
		}
		partitions, rows = partitions+1, rows+n
	}
	return partitions, rows, nil
}

func (d *Driver) dropPartition(ctx context.Context, period int64) (int64, error) {
	name := d.partitionName(period)
	var exists, attached, pending bool
	var rows int64
	if err := d.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, count(i.*) > 0, coalesce(bool_or(i.inhdetachpending), false),
		coalesce((SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass($1)), -1)
		FROM (SELECT 1) one LEFT JOIN pg_inherits i ON i.inhrelid = to_regclass($1) AND i.inhparent = to_regclass($2)`,
		name, d.t.Inbox).Scan(&exists, &attached, &pending, &rows); err != nil {
		return 0, err
	}
	if exists {
		if attached {
			// CONCURRENTLY cannot run in a transaction block: one statement
			// on its own.
			how := " CONCURRENTLY"
			if pending {
				how = " FINALIZE"
			}
			if _, err := d.pool.Exec(ctx, d.t.Expand(`ALTER TABLE {inbox} DETACH PARTITION `+name+how)); err != nil {
				return 0, err
			}
		}
		// The planner's row count of a partition that autovacuum or ANALYZE
		// has seen saves a scan of the whole partition (a core for a second
		// per few million rows); only one never analyzed is counted.
		if rows < 0 {
			if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM `+name).Scan(&rows); err != nil {
				return 0, err
			}
		}
		if _, err := d.pool.Exec(ctx, `DROP TABLE `+name); err != nil {
			return 0, err
		}
	}
	_, err := d.pool.Exec(ctx, d.expandP(`UPDATE {periods} SET dropped_at = now() WHERE period = $1`), period)
	return rows, err
}

// Period describes one period of the partitioned layout.
type Period struct {
	Period    int64
	StartedAt time.Time
	EndedAt   time.Time // zero for the current period
	DroppedAt time.Time // zero while its partition exists
	Length    time.Duration
}

// Periods lists the periods, oldest first.
func (d *Driver) Periods(ctx context.Context) ([]Period, error) {
	l, err := d.layoutOf(ctx)
	if err != nil {
		return nil, err
	}
	if !l.partitioned {
		return nil, ErrNotPartitioned
	}
	rows, _ := d.pool.Query(ctx, d.expandP(`SELECT period, started_at, ended_at, dropped_at,
		(extract(epoch FROM length) * 1000000)::bigint FROM {periods} ORDER BY period`))
	var out []Period
	var p Period
	var ended, dropped *time.Time
	var us int64
	_, err = pgx.ForEachRow(rows, []any{&p.Period, &p.StartedAt, &ended, &dropped, &us}, func() error {
		if ended != nil {
			p.EndedAt = *ended
		}
		if dropped != nil {
			p.DroppedAt = *dropped
		}
		p.Length = time.Duration(us) * time.Microsecond
		out = append(out, p)
		p, ended, dropped = Period{}, nil, nil
		return nil
	})
	return out, err
}
