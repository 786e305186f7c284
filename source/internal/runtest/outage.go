package runtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// Outage is a consumer's database on a private cluster that a test takes
// down: Start it, let the consumer meet the outage, then Check that every
// message took effect once, soon after the database came back.
type Outage struct {
	Cluster *testdb.Cluster
	Pool    *pgxpool.Pool
	Driver  *pgstore.Driver
}

// NewOutage starts a private cluster with a migrated inbox and an effects
// table (message_id text) without a unique constraint of its own.
func NewOutage(t testing.TB) *Outage {
	t.Helper()
	cluster := testdb.StartCluster(t)
	pool := cluster.Pool(t, 4)
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (message_id text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return &Outage{Cluster: cluster, Pool: pool, Driver: d}
}

// Stop takes the database down (immediate mode).
func (o *Outage) Stop(t testing.TB) {
	t.Helper()
	if err := o.Cluster.Stop("immediate"); err != nil {
		t.Fatal(err)
	}
}

// Ride runs the consumer (run) through an outage of length outage, already
// begun by Stop, then brings the database back and waits until stats
// reports n messages acked, failing t if that takes longer than bound or
// if no batch failed during the outage (the test then did not see one; on
// a loaded machine a consumer backing off may fail only once in it). It
// stops the consumer before returning.
func (o *Outage) Ride(t testing.TB, run func(context.Context) error, stats func() (acked, batchErrors int64), n int64, outage, bound time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(outage) // the outage the test is about, not a wait for something
	if err := o.Cluster.Start(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	if _, failed := stats(); failed < 1 {
		t.Fatalf("no batch failed during the outage: the test did not see one")
	}
	for {
		acked, failed := stats()
		if acked >= n {
			t.Logf("all %d messages acked %s after the database came back; %d batches had failed", n, time.Since(back).Round(time.Millisecond), failed)
			return
		}
		if time.Since(back) > bound {
			t.Fatalf("%s after the database came back: %d of %d acked, %d batches failed", bound, acked, n, failed)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Check fails t unless the effects table holds n distinct messages and no
// message was dead-lettered.
func (o *Outage) Check(t testing.TB, n int) {
	t.Helper()
	ctx := context.Background()
	var effects int
	if err := o.Pool.QueryRow(ctx, `SELECT count(DISTINCT message_id) FROM effects`).Scan(&effects); err != nil {
		t.Fatal(err)
	}
	dls, err := o.Driver.ListDeadLetters(ctx, store.ListFilter{})
	if err != nil || effects != n || len(dls) != 0 {
		t.Errorf("%d distinct effects (want %d), dead letters %+v (%v)", effects, n, dls, err)
	}
}
