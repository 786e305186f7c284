package pgcore

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
	"io/fs"
	"strconv"
	"time"

	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// ErrNotPartitioned is returned by the partition methods of a Driver whose
// inbox table is not partitioned.
var ErrNotPartitioned = errors.New("txinbox: the inbox table is not partitioned (migrate with Options.Partitioned)")

// ErrPeriodSwitchBusy is returned by RotatePeriod when batch transactions
// held the period lock longer than the switch may make new batches wait;
// the next call tries again.
var ErrPeriodSwitchBusy = errors.New("txinbox: period switch gave up waiting for in-flight batch transactions")

// switchLockTimeout bounds how long a period switch waits for in-flight
// batch transactions, which is also how long new batches can wait for the
// switch.
const switchLockTimeout = "1s"

// LockPeriodShared is the first statement of every batch transaction of
// the partitioned layout, with the layout's PeriodLock.
const LockPeriodShared = `SELECT pg_advisory_xact_lock_shared($1)`

// Layout is what the store learnt about the inbox table.
type Layout struct {
	Partitioned bool
	PeriodLock  int64 // advisory lock key of period switches
	DDLLock     int64 // advisory lock key of partition creation
}

// layoutOf detects the layout once the inbox table exists: drivers opened
// without Options.Partitioned on a partitioned inbox use it as such.
func (c *Core) layoutOf(ctx context.Context) (*Layout, error) {
	if l := c.layout.Load(); l != nil {
		return l, nil
	}
	var kind *string
	l := &Layout{}
	_, err := QueryRow(ctx, c.db, `SELECT (SELECT relkind::text FROM pg_class WHERE oid = to_regclass($3::text)), k,
		hashtextextended('txinbox.partitions.' || s, 0)
		FROM (SELECT coalesce(nullif($1::text, ''), current_schema(), '') || '.' || $2::text AS s) n,
		LATERAL (SELECT hashtextextended('txinbox.period.' || n.s, 0) AS k) p`,
		[]any{c.opts.Schema, c.t.Prefix, c.t.Inbox}, &kind, &l.PeriodLock, &l.DDLLock)
	if err != nil {
		return nil, c.errf("reading the layout of %s: %w", c.t.Inbox, err)
	}
	l.Partitioned = kind != nil && *kind == "p"
	if kind != nil { // not created yet: detect again next time
		c.layout.Store(l)
	}
	return l, nil
}

// Partitioned reports whether the inbox table is partitioned by period.
func (c *Core) Partitioned(ctx context.Context) (bool, error) {
	l, err := c.layoutOf(ctx)
	if err != nil {
		return false, err
	}
	return l.Partitioned, nil
}

func (c *Core) partitionName(period int64) string {
	return pgsql.Qualify(c.opts.Schema, c.t.Prefix+"inbox_p"+strconv.FormatInt(period, 10))
}

// migratePartitioned runs in Migrate's transaction right after migration
// 001 created the plain inbox: it replaces it by the partitioned one, with
// period 1 current and the partitions of periods 1 and 2.
func (c *Core) migratePartitioned(ctx context.Context, tx Querier) error {
	ddl, err := fs.ReadFile(partitionedFS, "partitioned/inbox.sql")
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, c.expandP(string(ddl))); err != nil {
		return c.errf("partitioned inbox: %w", err)
	}
	if _, err := tx.Exec(ctx, c.expandP(`INSERT INTO {periods} (period, length) VALUES (1, $1::bigint * interval '1 microsecond')`),
		c.opts.PartitionPeriod.Microseconds()); err != nil {
		return err
	}
	for p := int64(1); p <= 2; p++ {
		if _, err := tx.Exec(ctx, c.t.Expand(`CREATE TABLE `+c.partitionName(p)+` PARTITION OF {inbox} FOR VALUES IN (`+
			strconv.FormatInt(p, 10)+`)`)); err != nil {
			return c.errf("partition of period %d: %w", p, err)
		}
	}
	return nil
}

// checkLayoutOption refuses Options.Partitioned on an existing plain inbox:
// the layout is chosen when the table is created.
func (c *Core) checkLayoutOption(ctx context.Context, tx Querier) error {
	var kind *string
	if _, err := QueryRow(ctx, tx, `SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1::text)`, []any{c.t.Inbox}, &kind); err != nil {
		return err
	}
	if kind != nil && *kind != "p" {
		return c.errf("Options.Partitioned: the inbox table %s already exists unpartitioned; "+
			"the layout is chosen by the first migrate (create a new schema or prefix, or drop the empty table)", c.t.Inbox)
	}
	return nil
}

// RotatePeriod starts the next period when the current one has lasted its
// length, or at once with force, and makes sure the partition of the
// period after it exists. It returns the current period afterwards and
// whether this call switched. Switching takes the period lock exclusively
// (see the top of partition.go): new batches wait for it at most about
// 1 s, after which it gives up with ErrPeriodSwitchBusy.
func (c *Core) RotatePeriod(ctx context.Context, force bool) (period int64, switched bool, err error) {
	l, err := c.layoutOf(ctx)
	if err != nil {
		return 0, false, err
	}
	if !l.Partitioned {
		return 0, false, ErrNotPartitioned
	}
	var due bool
	if _, err := QueryRow(ctx, c.db, c.expandP(`SELECT period, now() >= started_at + length FROM {periods} WHERE ended_at IS NULL`), nil,
		&period, &due); err != nil {
		return 0, false, c.errf("reading the current period: %w", err)
	}
	// The next partition is attached outside the switch, so the switch
	// itself is two row updates.
	if err := c.ensurePartition(ctx, l, period+1); err != nil || (!due && !force) {
		return period, false, err
	}
	err = c.db.InTx(ctx, func(tx Querier) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+switchLockTimeout+`'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, l.PeriodLock); err != nil {
			return err
		}
		// Another process may have switched meanwhile.
		var cur int64
		if _, err := QueryRow(ctx, tx, c.expandP(`SELECT period, now() >= started_at + length FROM {periods} WHERE ended_at IS NULL FOR UPDATE`), nil,
			&cur, &due); err != nil {
			return err
		}
		if cur != period || (!due && !force) {
			period = cur
			return nil
		}
		if _, err := tx.Exec(ctx, c.expandP(`UPDATE {periods} SET ended_at = now() WHERE period = $1`), cur); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, c.expandP(`INSERT INTO {periods} (period, started_at, length)
			SELECT period + 1, now(), length FROM {periods} WHERE period = $1`), cur); err != nil {
			return err
		}
		period, switched = cur+1, true
		return nil
	})
	if SQLState(err) == "55P03" { // lock_not_available
		return period, false, ErrPeriodSwitchBusy
	}
	if err != nil {
		return period, false, c.errf("switching period: %w", err)
	}
	return period, switched, c.ensurePartition(ctx, l, period+1)
}

// ensurePartition creates the partition of period if it is missing, as a
// table of its own attached afterwards: CREATE TABLE ... PARTITION OF
// would lock the inbox ACCESS EXCLUSIVE, ATTACH PARTITION takes only SHARE
// UPDATE EXCLUSIVE, which inserts and selects do not wait for.
func (c *Core) ensurePartition(ctx context.Context, l *Layout, period int64) error {
	name := c.partitionName(period)
	var exists bool
	if _, err := QueryRow(ctx, c.db, `SELECT to_regclass($1::text) IS NOT NULL`, []any{name}, &exists); err != nil || exists {
		return err
	}
	err := c.db.InTx(ctx, func(tx Querier) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, l.DDLLock); err != nil {
			return err
		}
		if _, err := QueryRow(ctx, tx, `SELECT to_regclass($1::text) IS NOT NULL`, []any{name}, &exists); err != nil || exists {
			return err
		}
		p := strconv.FormatInt(period, 10)
		_, err := tx.Exec(ctx, c.t.Expand(`CREATE TABLE `+name+` (LIKE {inbox} INCLUDING DEFAULTS);
			ALTER TABLE {inbox} ATTACH PARTITION `+name+` FOR VALUES IN (`+p+`)`))
		return err
	})
	if err != nil {
		return c.errf("creating the partition of period %d: %w", period, err)
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
func (c *Core) DropExpiredPartitions(ctx context.Context, before time.Time) (partitions int, rows int64, err error) {
	l, err := c.layoutOf(ctx)
	if err != nil {
		return 0, 0, err
	}
	if !l.Partitioned {
		return 0, 0, ErrNotPartitioned
	}
	qr, err := c.db.Query(ctx, c.expandP(`SELECT period FROM {periods}
		WHERE ended_at < $1 AND dropped_at IS NULL ORDER BY period`), before)
	var periods []int64
	var period int64
	if err := ForEach(qr, err, []any{&period}, func() error { periods = append(periods, period); return nil }); err != nil {
		return 0, 0, c.errf("listing expired periods: %w", err)
	}
	for _, p := range periods {
		n, err := c.dropPartition(ctx, p)
		if err != nil {
			return partitions, rows, c.errf("dropping the partition of period %d: %w", p, err)
		}
		partitions, rows = partitions+1, rows+n
	}
	return partitions, rows, nil
}

func (c *Core) dropPartition(ctx context.Context, period int64) (int64, error) {
	name := c.partitionName(period)
	var exists, attached, pending bool
	var rows int64
	if _, err := QueryRow(ctx, c.db, `SELECT to_regclass($1::text) IS NOT NULL, count(i.*) > 0, coalesce(bool_or(i.inhdetachpending), false),
		coalesce((SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass($1::text)), -1)
		FROM (SELECT 1) one LEFT JOIN pg_inherits i ON i.inhrelid = to_regclass($1::text) AND i.inhparent = to_regclass($2::text)`,
		[]any{name, c.t.Inbox}, &exists, &attached, &pending, &rows); err != nil {
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
			if _, err := c.db.Exec(ctx, c.t.Expand(`ALTER TABLE {inbox} DETACH PARTITION `+name+how)); err != nil {
				return 0, err
			}
		}
		// The planner's row count of a partition that autovacuum or ANALYZE
		// has seen saves a scan of the whole partition (a core for a second
		// per few million rows); only one never analyzed is counted.
		if rows < 0 {
			if _, err := QueryRow(ctx, c.db, `SELECT count(*) FROM `+name, nil, &rows); err != nil {
				return 0, err
			}
		}
		if _, err := c.db.Exec(ctx, `DROP TABLE `+name); err != nil {
			return 0, err
		}
	}
	_, err := c.db.Exec(ctx, c.expandP(`UPDATE {periods} SET dropped_at = now() WHERE period = $1`), period)
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
func (c *Core) Periods(ctx context.Context) ([]Period, error) {
	l, err := c.layoutOf(ctx)
	if err != nil {
		return nil, err
	}
	if !l.Partitioned {
		return nil, ErrNotPartitioned
	}
	rows, err := c.db.Query(ctx, c.expandP(`SELECT period, started_at, ended_at, dropped_at,
		(extract(epoch FROM length) * 1000000)::bigint FROM {periods} ORDER BY period`))
	var out []Period
	var p Period
	var ended, dropped *time.Time
	var us int64
	err = ForEach(rows, err, []any{&p.Period, &p.StartedAt, &ended, &dropped, &us}, func() error {
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
