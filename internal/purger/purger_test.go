package purger_test

import (
	"context"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/purger"
	"github.com/txinbox/txinbox/internal/testdb"
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
	pg, err := purger.New(d, purger.Config{Retention: 30 * 24 * time.Hour, BatchSize: 500, MinBatch: 100, MaxBatch: 4000,
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
	if _, err := purger.New(nil, purger.Config{}); err == nil {
		t.Error("no retention accepted")
	}
	if _, err := purger.New(nil, purger.Config{Retention: time.Hour, BatchSize: 10, MinBatch: 100}); err == nil {
		t.Error("batch below the minimum accepted")
	}
}
