package amqp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/source/amqp"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// TestCatchesUpSoonAfterADatabaseOutage: with the default backoff, the
// consumer's database (a private cluster) is down for 10 seconds while
// messages wait. Every message must be processed once, none
// dead-lettered, and the last one soon after the database is back: within
// 20 s (the count of failed batches alone held the last ones for the
// backoff's 30 s ceiling).
func TestCatchesUpSoonAfterADatabaseOutage(t *testing.T) {
	t.Parallel()
	requireRabbitMQ(t)
	cluster := testdb.StartCluster(t)
	pool := cluster.Pool(t, 4)
	ctx := context.Background()
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (message_id text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	b, _ := newBroker(t, true)
	f := &queueFixture{t: t, b: b.(*broker), pool: pool, driver: d}
	const n = 300
	var ps []amqp091.Publishing
	for i := range n {
		ps = append(ps, amqp091.Publishing{MessageId: fmt.Sprint("m", i), Body: []byte("x")})
	}
	f.publish(ps...)
	cfg := f.config()
	cfg.Inbox.MaxBatchSize = 20
	c, err := amqp.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Stop("immediate"); err != nil {
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
	time.Sleep(10 * time.Second) // the outage the test is about, not a wait for something
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	if c.Stats().BatchErrors < 5 {
		t.Fatalf("only %d batches failed during the outage: the test did not see one", c.Stats().BatchErrors)
	}
	for c.Stats().Acked < n {
		if time.Since(back) > 20*time.Second {
			t.Fatalf("20s after the database came back: %+v", c.Stats())
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
