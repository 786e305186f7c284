package jetstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/source/jetstream"
	"github.com/txinbox/txinbox/source/sourcetest"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// TestCatchesUpSoonAfterADatabaseOutage: with the default backoff, the
// consumer's database (a private cluster) is down for 5 seconds while
// messages arrive. Every message must be processed once, none
// dead-lettered by the delivery-count guard, and the last one soon after
// the database is back: within 30 s (the count of failed batches alone
// pushed the redelivery delay to its 5-minute ceiling).
func TestCatchesUpSoonAfterADatabaseOutage(t *testing.T) {
	t.Parallel()
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
	f := &streamFixture{t: t, pool: pool, driver: d}
	b, _ := newBroker(t)
	f.b = b.(*broker)
	cfg := f.config(insertEffect)
	cfg.Inbox.MaxBatchSize = 20
	c, err := jetstream.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	msgs := make([]sourcetest.Message, n)
	for i := range msgs {
		msgs[i] = sourcetest.Message{ID: fmt.Sprint("m", i), Body: []byte("x")}
	}
	if err := cluster.Stop("immediate"); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Publish(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(5 * time.Second) // the outage the test is about, not a wait for something
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	if c.Stats().BatchErrors < 5 {
		t.Fatalf("only %d batches failed during the outage: the test did not see one", c.Stats().BatchErrors)
	}
	for c.Stats().Acked < n {
		if time.Since(back) > 30*time.Second {
			t.Fatalf("30s after the database came back: %+v", c.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("all %d messages acked %s after the database came back; %d batches had failed", n, time.Since(back).Round(time.Millisecond), c.Stats().BatchErrors)
	var effects int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT message_id) FROM effects`).Scan(&effects); err != nil {
		t.Fatal(err)
	}
	dls, err := d.ListDeadLetters(ctx, store.ListFilter{})
	if err != nil || effects != n || len(dls) != 0 {
		t.Errorf("%d distinct effects (want %d), dead letters %+v (%v)", effects, n, dls, err)
	}
}
