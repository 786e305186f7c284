package purge_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// newStore returns a migrated pgstore with n inbox rows received 40 days
// ago and 3 received now.
func newStore(t *testing.T, n int) *pgstore.Driver {
	t.Helper()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	pool := testdb.PoolIn(t, schema, 8)
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(ctx, d.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, payload_hash, received_at)
		SELECT 's', 'old-' || g, '\x00'::bytea, now() - interval '40 days' FROM generate_series(1, $1) g
		UNION ALL SELECT 's', 'new-' || g, '\x00'::bytea, now() FROM generate_series(1, 3) g`), n)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRoundPurgesExpiredInAdaptiveBatches(t *testing.T) {
	t.Parallel()
	d := newStore(t, 2500)
	var batches int
	pg, err := purge.New(d, purge.Config{Retention: 30 * 24 * time.Hour, BatchSize: 500, MinBatch: 100, MaxBatch: 4000,
		TargetBatchTime: time.Hour, // every batch is "fast": the size doubles
		OnBatch:         func(store.PurgeResult, time.Duration) { batches++ }})
	if err != nil {
		t.Fatal(err)
	}
	total, err := pg.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := d.Stats(context.Background())
	if total.Inbox != 2500 || s.Inbox != 3 {
		t.Errorf("purged %d, left %d; want 2500 purged, 3 new rows left", total.Inbox, s.Inbox)
	}
	// 500 + 1000 + 2000 (partly) : the size doubled after each fast batch.
	if batches != 3 || pg.BatchSize() != 4000 {
		t.Errorf("%d batches, batch size now %d; want 3 and 4000", batches, pg.BatchSize())
	}
}

func TestPurgeSkipsLockedRowsAndOnePurgerRuns(t *testing.T) {
	t.Parallel()
	d := newStore(t, 10)
	ctx := context.Background()
	// A transaction holds a lock on one expired row (as an in-flight
	// transaction would): the purge must skip it, not wait for it.
	tx, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, d.Tables().Expand(`SELECT 1 FROM {inbox} WHERE message_id = 'old-1' FOR UPDATE`)); err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := d.PurgeBatch(qctx, store.PurgeRequest{Before: time.Now().Add(-30 * 24 * time.Hour), Limit: 100})
	if err != nil || res.Inbox != 9 {
		t.Fatalf("PurgeBatch = %+v, %v; want the 9 unlocked expired rows", res, err)
	}
	release, ok, err := d.PurgeLock(ctx)
	if err != nil || !ok {
		t.Fatalf("first PurgeLock = %v, %v", ok, err)
	}
	if _, ok2, err := d.PurgeLock(ctx); err != nil || ok2 {
		t.Errorf("second PurgeLock while held = %v, %v; want false", ok2, err)
	}
	release()
	release2, ok, err := d.PurgeLock(ctx)
	if err != nil || !ok {
		t.Errorf("PurgeLock after release = %v, %v", ok, err)
	}
	release2()
}

func TestConfigValidation(t *testing.T) {
	if _, err := purge.New(nil, purge.Config{}); err == nil {
		t.Error("no retention accepted")
	}
	if _, err := purge.New(nil, purge.Config{Retention: time.Hour, BatchSize: 10, MinBatch: 100}); err == nil {
		t.Error("batch below the minimum accepted")
	}
}

// TestHotPathNeverWaitsForThePurger processes new messages on 4
// connections while a purge round removes 60,000 expired rows, in both
// layouts (row deletes; a partition drop). Every 2 ms a sampler asks
// pg_stat_activity whether a hot-path backend waits for a lock held by the
// purger's backend (pg_blocking_pids); the hot path also runs with
// lock_timeout = 200ms, so a longer wait fails its batch outright.
func TestHotPathNeverWaitsForThePurger(t *testing.T) {
	for _, partitioned := range []bool{false, true} {
		t.Run(map[bool]string{false: "rows", true: "partitions"}[partitioned], func(t *testing.T) {
			t.Parallel()
			testHotPathNeverWaits(t, partitioned)
		})
	}
}

func testHotPathNeverWaits(t *testing.T, partitioned bool) {
	const expired = 60000
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	ctx := context.Background()
	hot := namedPool(t, schema, "txinbox-hot", 6, map[string]string{"lock_timeout": "200ms"})
	cold := namedPool(t, schema, "txinbox-purger", 3, nil)
	hd, _ := pgstore.New(hot, pgstore.Options{Partitioned: partitioned})
	if err := hd.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	cd, _ := pgstore.New(cold, pgstore.Options{})
	if _, err := hot.Exec(ctx, "CREATE TABLE effects (message_id text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	fillExpired(t, hd, partitioned, expired)
	p, err := txinbox.NewProcessor(hd, txinbox.Config[pgx.Tx]{Scope: "hot",
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			ids := make([]string, len(msgs))
			for i, m := range msgs {
				ids[i] = m.ID
			}
			_, err := tx.Exec(ctx, "INSERT INTO effects SELECT unnest($1::text[])", ids)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var batches, samples, waitsOnPurger, waitsOther atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				msgs := make([]*txinbox.Message, 100)
				for j := range msgs {
					msgs[j] = &txinbox.Message{ID: fmt.Sprintf("w%d-%d-%d", w, i, j), Payload: []byte("x")}
				}
				if _, err := p.Process(ctx, msgs); err != nil {
					errs <- fmt.Errorf("hot path: %w", err)
					return
				}
				batches.Add(1)
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			var onPurger, other int64
			if err := admin.QueryRow(ctx, `SELECT
				count(*) FILTER (WHERE EXISTS (SELECT 1 FROM pg_stat_activity b WHERE b.pid = ANY(pg_blocking_pids(a.pid)) AND b.application_name = 'txinbox-purger')),
				count(*) FILTER (WHERE a.wait_event_type = 'Lock')
				FROM pg_stat_activity a WHERE a.application_name = 'txinbox-hot' AND a.wait_event_type = 'Lock'`).Scan(&onPurger, &other); err != nil {
				errs <- fmt.Errorf("sampler: %w", err)
				return
			}
			samples.Add(1)
			waitsOnPurger.Add(onPurger)
			waitsOther.Add(other - onPurger)
			time.Sleep(2 * time.Millisecond) // the sampling period, not a wait for an event
		}
	})
	// Let processing reach its pace before the purge starts.
	for batches.Load() < 8 && len(errs) == 0 {
		runtime.Gosched()
	}
	pg, err := purge.New(cd, purge.Config{Retention: 30 * 24 * time.Hour, BatchSize: 5000})
	if err != nil {
		t.Fatal(err)
	}
	before := batches.Load()
	total, err := pg.Round(ctx)
	during := batches.Load() - before
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err != nil || total.Inbox != expired {
		t.Fatalf("Round = %+v, %v; want %d inbox rows", total, err, expired)
	}
	if waitsOnPurger.Load() != 0 {
		t.Errorf("the hot path waited for a purger lock in %d of %d samples", waitsOnPurger.Load(), samples.Load())
	}
	var inbox, effects int64
	if err := cold.QueryRow(ctx, hd.Tables().Expand(`SELECT (SELECT count(*) FROM {inbox}), (SELECT count(*) FROM effects)`)).Scan(&inbox, &effects); err != nil {
		t.Fatal(err)
	}
	if inbox != effects || effects != batches.Load()*100 {
		t.Errorf("%d inbox rows, %d effects, %d batches of 100", inbox, effects, batches.Load())
	}
	t.Logf("%d hot batches during the purge, %d samples, %d hot-path lock waits on others", during, samples.Load(), waitsOther.Load())
}

// fillExpired adds n inbox rows received 40 days ago: in the plain layout
// in the one table; in the partitioned one in period 1, which is then
// ended 35 days ago (a test device), with the current period 2.
func fillExpired(t *testing.T, d *pgstore.Driver, partitioned bool, n int) {
	t.Helper()
	ctx := context.Background()
	cols, vals := "", ""
	if partitioned {
		cols, vals = ", period", ", 1"
	}
	if _, err := d.Pool().Exec(ctx, d.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, payload_hash, received_at`+cols+`)
		SELECT 'old', 'old-' || g, '\x00'::bytea, now() - interval '40 days'`+vals+` FROM generate_series(1, $1) g`), n); err != nil {
		t.Fatal(err)
	}
	if !partitioned {
		return
	}
	if _, _, err := d.RotatePeriod(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool().Exec(ctx, `UPDATE `+d.Tables().Prefix+`inbox_periods SET ended_at = now() - interval '35 days' WHERE period = 1`); err != nil {
		t.Fatal(err)
	}
}

func namedPool(t *testing.T, schema, app string, conns int32, params map[string]string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	for k, v := range params {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	cfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestScopesKeepTheirOwnRetention: with per-scope retentions, each scope
// loses only the rows past its own retention, and a scope not listed keeps
// its rows for the longest retention.
func TestScopesKeepTheirOwnRetention(t *testing.T) {
	t.Parallel()
	admin := testdb.Require(t)
	pool := testdb.PoolIn(t, testdb.NewSchema(t, admin), 4)
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Rows 10, 40 and 70 days old in each of three scopes.
	if _, err := pool.Exec(ctx, d.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, payload_hash, received_at)
		SELECT s, 'm' || age, '\x00'::bytea, now() - age * interval '1 day'
		FROM unnest(ARRAY['short', 'long', 'unlisted']) s, unnest(ARRAY[10, 40, 70]) age`)); err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	pg, err := purge.New(d, purge.Config{Retention: 30 * day,
		Scopes: []purge.ScopeRetention{{Scope: "short", Retention: 7 * day}, {Scope: "long", Retention: 60 * day}}})
	if err != nil {
		t.Fatal(err)
	}
	total, err := pg.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]int{}
	rows, _ := pool.Query(ctx, d.Tables().Expand(`SELECT scope, count(*) FROM {inbox} GROUP BY scope`))
	var scope string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&scope, &n}, func() error { left[scope] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	// short (7d): none left; long (60d): 10 and 40 left; unlisted: the
	// longest retention (60d) applies, so 10 and 40 left.
	if left["short"] != 0 || left["long"] != 2 || left["unlisted"] != 2 || total.Inbox != 5 {
		t.Errorf("left %v after purging %d, want short 0, long 2, unlisted 2 (5 purged)", left, total.Inbox)
	}
	if _, err := purge.New(d, purge.Config{Retention: day, Scope: "a", Scopes: []purge.ScopeRetention{{Scope: "b", Retention: day}}}); err == nil {
		t.Error("Scope with Scopes: no error")
	}
	if _, err := purge.New(d, purge.Config{Retention: day, Scopes: []purge.ScopeRetention{{Scope: "b"}}}); err == nil {
		t.Error("a scope without retention: no error")
	}
}

// TestTablesGoWithTheAllScopePass: Config.Tables are purged after the
// inbox, batch by batch, with the longest retention's cutoff, not in a
// scope's pass; DryRun counts them and deletes nothing; a one-scope purge
// leaves them alone.
func TestTablesGoWithTheAllScopePass(t *testing.T) {
	t.Parallel()
	d := newStore(t, 10)
	ctx := context.Background()
	pool := d.Pool()
	_, err := pool.Exec(ctx, `CREATE TABLE receipts (id int, sent_at timestamptz);
		INSERT INTO receipts SELECT g, now() - interval '50 days' FROM generate_series(1, 7) g;
		INSERT INTO receipts SELECT g, now() - interval '40 days' FROM generate_series(8, 9) g`)
	if err != nil {
		t.Fatal(err)
	}
	table := purge.Table{Name: "receipts",
		Purge: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			tag, err := pool.Exec(ctx, `DELETE FROM receipts WHERE ctid = ANY(ARRAY(SELECT ctid FROM receipts WHERE sent_at < $1 LIMIT $2))`, before, limit)
			return tag.RowsAffected(), err
		},
		Count: func(ctx context.Context, before time.Time) (n int64, err error) {
			err = pool.QueryRow(ctx, `SELECT count(*) FROM receipts WHERE sent_at < $1`, before).Scan(&n)
			return n, err
		}}
	day := 24 * time.Hour
	var batches int
	cfg := purge.Config{Retention: 30 * day, Scopes: []purge.ScopeRetention{{Scope: "s", Retention: 45 * day}},
		Tables: []purge.Table{table}, BatchSize: 3, MinBatch: 3, MaxBatch: 3,
		OnTableBatch: func(string, int64, time.Duration) { batches++ }}
	p, err := purge.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := p.DryRun(ctx)
	if err != nil || dry.Tables["receipts"] != 9 {
		t.Fatalf("dry run: %+v, %v; want 9 receipts past 30d", dry, err)
	}
	res, err := p.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM receipts`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	// The longest retention is 45d: the receipts 40 days old stay.
	if res.Tables["receipts"] != 7 || left != 2 || batches != 3 || res.Total() != res.Inbox+res.Attempts+res.Drift+7 {
		t.Errorf("purged %v receipts in %d batches, %d left; want 7 in 3 batches, 2 left", res.Tables, batches, left)
	}
	one, err := purge.New(d, purge.Config{Retention: day, Scope: "s", Tables: []purge.Table{table}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := one.Round(ctx); err != nil || len(res.Tables) != 0 {
		t.Errorf("a one-scope round: %+v, %v; want the tables left alone", res, err)
	}
}
