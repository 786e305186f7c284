package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
)

// TestRebalanceRewindsQueuedRecords: a consumer with one worker holds the
// records of its other partitions queued while one lane runs; a second
// member joins, and the rebalance waits for the first. The queued records
// never started: their partitions must be set back to them before the
// rebalance is allowed (the client has fetched past them, and with the
// cooperative balancer the partitions the first member keeps go on from
// the client's position), or they are lost.
func TestRebalanceRewindsQueuedRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newCluster(t), 4)
	all := ids("queued", 1600)
	f.produce(all, 4)
	cfg := f.consumerConfig()
	cfg.Concurrency = 1
	cfg.Inbox.MaxBatchSize = 20
	cfg.Inbox.Handler = func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		time.Sleep(time.Millisecond) // lanes stay busy while the others queue
		return insertEffect(ctx, tx, m)
	}
	a := f.start(cfg)
	f.waitEffects(100)
	b := f.start(cfg)
	f.waitCommitted(90 * time.Second)
	a.stop()
	b.stop()
	f.checkExactlyOnce(all)
}
