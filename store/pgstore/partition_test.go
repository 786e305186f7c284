package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// partitionedInbox returns a migrated partitioned driver in a schema of its
// own with an effects table, and the schema.
func partitionedInbox(t *testing.T, conns int32) (*pgstore.Driver, string) {
	t.Helper()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	pool := testdb.PoolIn(t, schema, conns)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	d, err := pgstore.New(pool, pgstore.Options{Schema: schema, Partitioned: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return d, schema
}

func effectProcessor(t *testing.T, d *pgstore.Driver, extraSQL string) *txinbox.Processor[pgx.Tx] {
	t.Helper()
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "billing",
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			_, err := tx.Exec(ctx, "INSERT INTO effects SELECT $1, $2"+extraSQL, m.Scope, m.ID)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func outcomes(t *testing.T, p *txinbox.Processor[pgx.Tx], msgs ...*txinbox.Message) []txinbox.Outcome {
	t.Helper()
	res, err := p.Process(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]txinbox.Outcome, len(res))
	for i, r := range res {
		out[i] = r.Outcome
	}
	return out
}

// count runs a counting query.
func count(t *testing.T, d *pgstore.Driver, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := d.Pool().QueryRow(context.Background(), d.Tables().Expand(sql), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestPartitionedDuplicateCaughtAcrossPeriods(t *testing.T) {
	t.Parallel()
	d, _ := partitionedInbox(t, 4)
	ctx := context.Background()
	if ok, err := d.Partitioned(ctx); !ok || err != nil {
		t.Fatalf("Partitioned = %v, %v", ok, err)
	}
	p := effectProcessor(t, d, "")
	inv := func(payload string) *txinbox.Message { return &txinbox.Message{ID: "INV-1", Payload: []byte(payload)} }
	if got := outcomes(t, p, inv("A")); got[0] != txinbox.Processed {
		t.Fatalf("first delivery: %v", got)
	}
	for want := int64(2); want <= 3; want++ {
		if period, switched, err := d.RotatePeriod(ctx, true); err != nil || !switched || period != want {
			t.Fatalf("RotatePeriod = %d, %v, %v; want period %d", period, switched, err, want)
		}
	}
	// Days later, two periods on: still a duplicate, and drift is still seen.
	if got := outcomes(t, p, inv("A"), &txinbox.Message{ID: "INV-2", Payload: []byte("x")}); got[0] != txinbox.Duplicate || got[1] != txinbox.Processed {
		t.Fatalf("redelivery in period 3: %v", got)
	}
	if got := outcomes(t, p, inv("B")); got[0] != txinbox.Drift {
		t.Fatalf("other payload in period 3: %v", got)
	}
	if n := count(t, d, `SELECT count(*) FROM {inbox} WHERE message_id = 'INV-1' AND period = 1`); n != 1 {
		t.Fatalf("INV-1 rows in period 1: %d", n)
	}
	if n := count(t, d, `SELECT count(*) FROM {inbox} WHERE message_id = 'INV-1'`); n != 1 {
		t.Fatalf("INV-1 rows in all periods: %d", n)
	}
	if n := count(t, d, `SELECT count(*) FROM effects WHERE message_id = 'INV-1'`); n != 1 {
		t.Fatalf("INV-1 effects: %d", n)
	}
	// Inspect and the stats see the row in its old partition.
	in, err := d.Inspect(ctx, store.Key{Scope: "billing", MessageID: "INV-1"})
	if err != nil || in.Inbox == nil || len(in.Drift) != 1 {
		t.Fatalf("Inspect = %+v, %v", in, err)
	}
	// Periods 1 and 2 ended: dropping them forgets INV-1 (the retention
	// contract) but not INV-2 of period 3.
	parts, rows, err := d.DropExpiredPartitions(ctx, time.Now())
	if err != nil || parts != 2 || rows != 1 {
		t.Fatalf("DropExpiredPartitions = %d, %d, %v; want 2 partitions, 1 row", parts, rows, err)
	}
	if n := count(t, d, `SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass($1)`, d.Tables().Inbox); n != 2 {
		t.Errorf("partitions left: %d; want 2 (the current one and the next)", n)
	}
	if got := outcomes(t, p, inv("A"), &txinbox.Message{ID: "INV-2", Payload: []byte("x")}); got[0] != txinbox.Processed || got[1] != txinbox.Duplicate {
		t.Fatalf("after the drop: %v; want INV-1 processed again, INV-2 duplicate", got)
	}
	periods, err := d.Periods(ctx)
	if err != nil || len(periods) != 3 || periods[0].DroppedAt.IsZero() || !periods[2].EndedAt.IsZero() || periods[2].Length != 7*24*time.Hour {
		t.Fatalf("Periods = %+v, %v", periods, err)
	}
}

// TestPartitionedRaceAcrossPeriodSwitches claims the same keys from two
// goroutines while a third switches the period as fast as it can: a key
// claimed in an old period and again, concurrently, in a new one would
// show as two inbox rows and two effects.
func TestPartitionedRaceAcrossPeriodSwitches(t *testing.T) {
	t.Parallel()
	d, _ := partitionedInbox(t, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The effect is slow, to keep claims in flight across switches.
	p := effectProcessor(t, d, " FROM pg_sleep(0.002)")
	const keys = 300
	var wg sync.WaitGroup
	switches := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, ok, err := d.RotatePeriod(ctx, true); err == nil && ok {
				switches++
			}
		}
	})
	errs := make(chan error, 2)
	var work sync.WaitGroup
	for w := range 2 {
		work.Go(func() {
			for start := 0; start < keys; start += 10 {
				var msgs []*txinbox.Message
				for i := start; i < start+10; i++ {
					msgs = append(msgs, &txinbox.Message{ID: fmt.Sprint("k-", i), Payload: []byte("same")})
				}
				res, err := p.Process(context.Background(), msgs)
				if err != nil {
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
				for i, r := range res {
					if !r.Outcome.Ack() {
						errs <- fmt.Errorf("worker %d: %s: %v (%v)", w, msgs[i].ID, r.Outcome, r.Err)
						return
					}
				}
			}
		})
	}
	work.Wait()
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if switches < 3 {
		t.Fatalf("only %d period switches happened during the race", switches)
	}
	twice := count(t, d, `SELECT count(*) FROM (SELECT message_id FROM {inbox} GROUP BY 1 HAVING count(*) > 1) x`)
	rows := count(t, d, `SELECT count(*) FROM {inbox}`)
	effects := count(t, d, `SELECT count(*) FROM effects`)
	spread := count(t, d, `SELECT count(DISTINCT period) FROM {inbox}`)
	if twice != 0 || rows != keys || effects != keys {
		t.Fatalf("%d keys with two inbox rows, %d rows, %d effects; want 0, %d, %d", twice, rows, effects, keys, keys)
	}
	t.Logf("%d switches; the %d keys landed in %d periods", switches, keys, spread)
}

func TestPartitionedPurgeDropsPartitions(t *testing.T) {
	t.Parallel()
	d, _ := partitionedInbox(t, 4)
	ctx := context.Background()
	fill := func(period, n int, receivedAgo string) {
		t.Helper()
		if _, err := d.Pool().Exec(ctx, d.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, payload_hash, received_at, period)
			SELECT 's', 'p`+fmt.Sprint(period)+`-' || $2 || g, '\x00', now() - $2::interval, $1 FROM generate_series(1, $3) g`),
			period, receivedAgo, n); err != nil {
			t.Fatal(err)
		}
	}
	fill(1, 300, "45 days")
	if _, _, err := d.RotatePeriod(ctx, true); err != nil {
		t.Fatal(err)
	}
	fill(2, 200, "35 days")
	if _, _, err := d.RotatePeriod(ctx, true); err != nil {
		t.Fatal(err)
	}
	fill(3, 7, "40 days") // old messages processed late: in the current period
	fill(3, 5, "0 days")
	// Test device: periods 1 and 2 ended 40 and 31 days ago.
	if _, err := d.Pool().Exec(ctx, `UPDATE `+d.Tables().Prefix+`inbox_periods SET ended_at = now() - CASE period WHEN 1 THEN interval '40 days' ELSE interval '31 days' END WHERE period < 3`); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-30 * 24 * time.Hour)
	dry, err := d.PurgeBatch(ctx, store.PurgeRequest{Before: before, DryRun: true})
	if err != nil || dry.Inbox != 507 {
		t.Fatalf("dry run = %+v, %v; want 507 inbox rows", dry, err)
	}
	if n := count(t, d, `SELECT count(*) FROM {inbox}`); n != 512 {
		t.Fatalf("the dry run deleted: %d rows left", n)
	}
	// A one-scope purge drops nothing whole.
	res, err := d.PurgeBatch(ctx, store.PurgeRequest{Scope: "s", Before: before, Limit: 5})
	if err != nil || res.Inbox != 5 {
		t.Fatalf("scoped batch = %+v, %v; want 5 rows", res, err)
	}
	if n := count(t, d, `SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass($1)`, d.Tables().Inbox); n != 4 {
		t.Fatalf("a scoped purge dropped partitions: %d left", n)
	}
	res, err = d.PurgeBatch(ctx, store.PurgeRequest{Before: before, Limit: 1000})
	if err != nil || res.Inbox != 502 {
		t.Fatalf("batch = %+v, %v; want the 2 partitions (495 rows left of 500) and the 7 late rows", res, err)
	}
	if n := count(t, d, `SELECT count(*) FROM {inbox}`); n != 5 {
		t.Fatalf("%d rows left; want the 5 new ones", n)
	}
	for p := 1; p <= 2; p++ {
		if n := count(t, d, `SELECT count(*) FROM pg_class WHERE oid = to_regclass($1)`, d.Tables().Prefix+fmt.Sprint("inbox_p", p)); n != 0 {
			t.Errorf("partition of period %d still exists", p)
		}
	}
	if res, err := d.PurgeBatch(ctx, store.PurgeRequest{Before: before, Limit: 1000}); err != nil || res.Total() != 0 {
		t.Errorf("second batch = %+v, %v; want nothing", res, err)
	}
}

func TestPartitionedLayoutChosenAtFirstMigrate(t *testing.T) {
	t.Parallel()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	pool := testdb.PoolIn(t, schema, 2)
	ctx := context.Background()
	plain, _ := pgstore.New(pool, pgstore.Options{Schema: schema})
	if err := plain.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := plain.RotatePeriod(ctx, true); err != pgstore.ErrNotPartitioned {
		t.Errorf("RotatePeriod on a plain inbox = %v", err)
	}
	part, _ := pgstore.New(pool, pgstore.Options{Schema: schema, Partitioned: true})
	err := part.Migrate(ctx)
	if err == nil || !strings.Contains(err.Error(), "already exists unpartitioned") {
		t.Errorf("partitioned Migrate on a plain inbox = %v", err)
	}
	if _, err := pgstore.New(pool, pgstore.Options{PartitionPeriod: time.Second}); err == nil ||
		!strings.Contains(err.Error(), "PartitionPeriod") {
		t.Errorf("a 1s period = %v", err)
	}
}

const envPeriodChild = "TXINBOX_PGSTORE_PERIOD_CHILD"

// runPeriodChild is the child process of
// TestPartitionedTwoProcessesAcrossPeriodSwitches: it claims keys k-0 to
// k-299 in batches of 10 with a slow effect, on the inbox that the
// environment names (URL|schema), and exits.
func runPeriodChild() {
	desc := os.Getenv(envPeriodChild)
	if desc == "" {
		return
	}
	err := func() error {
		ctx := context.Background()
		url, schema, _ := strings.Cut(desc, "|")
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			return err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer pool.Close()
		d, err := pgstore.New(pool, pgstore.Options{Schema: schema}) // the layout is detected
		if err != nil {
			return err
		}
		p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "billing",
			Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				_, err := tx.Exec(ctx, "INSERT INTO effects SELECT $1, $2 FROM pg_sleep(0.002)", m.Scope, m.ID)
				return err
			}})
		if err != nil {
			return err
		}
		for start := 0; start < 300; start += 10 {
			var msgs []*txinbox.Message
			for i := start; i < start+10; i++ {
				msgs = append(msgs, &txinbox.Message{ID: fmt.Sprint("k-", i), Payload: []byte("same")})
			}
			res, err := p.Process(ctx, msgs)
			if err != nil {
				return err
			}
			for i, r := range res {
				if !r.Outcome.Ack() {
					return fmt.Errorf("%s: %v (%v)", msgs[i].ID, r.Outcome, r.Err)
				}
			}
		}
		return nil
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "period child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestPartitionedTwoProcessesAcrossPeriodSwitches is the race of
// TestPartitionedRaceAcrossPeriodSwitches between two processes.
func TestPartitionedTwoProcessesAcrossPeriodSwitches(t *testing.T) {
	t.Parallel()
	d, schema := partitionedInbox(t, 4)
	ctx := context.Background()
	done := make(chan error, 2)
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envPeriodChild+"="+testdb.URL()+"|"+schema)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, out.String())
			}
			done <- err
		}()
	}
	switches := 0
	for running := 2; running > 0; {
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
			running--
		default:
			if _, ok, err := d.RotatePeriod(ctx, true); err == nil && ok {
				switches++
			}
		}
	}
	twice := count(t, d, `SELECT count(*) FROM (SELECT message_id FROM {inbox} GROUP BY 1 HAVING count(*) > 1) x`)
	rows := count(t, d, `SELECT count(*) FROM {inbox}`)
	effects := count(t, d, `SELECT count(*) FROM effects`)
	if twice != 0 || rows != 300 || effects != 300 {
		t.Fatalf("%d keys with two inbox rows, %d rows, %d effects; want 0, 300, 300", twice, rows, effects)
	}
	if switches < 3 {
		t.Fatalf("only %d period switches happened during the race", switches)
	}
	t.Logf("%d switches", switches)
}
