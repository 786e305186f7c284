package jetstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/txinbox/txinbox/source/internal/runtest"
	"github.com/txinbox/txinbox/source/sourcetest"
)

// TestCatchesUpSoonAfterADatabaseOutage: with the default backoff, the
// consumer's database (a private cluster) is down for 5 seconds while
// messages arrive. Every message must be processed once, none
// dead-lettered by the delivery-count guard, and the last one soon after
// the database is back: within 30 s (the count of failed batches alone
// pushed the redelivery delay to its 5-minute ceiling).
func TestCatchesUpSoonAfterADatabaseOutage(t *testing.T) {
	t.Parallel()
	o := runtest.NewOutage(t)
	f := &streamFixture{t: t, pool: o.Pool, driver: o.Driver}
	b, _ := newBroker(t)
	f.b = b.(*broker)
	cfg := f.config(insertEffect)
	cfg.Inbox.MaxBatchSize = 20
	c, err := newConsumer(t, o.Driver, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	msgs := make([]sourcetest.Message, n)
	for i := range msgs {
		msgs[i] = sourcetest.Message{ID: fmt.Sprint("m", i), Body: []byte("x")}
	}
	o.Stop(t)
	if err := f.b.Publish(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	o.Ride(t, c.Run, func() (int64, int64) { st := c.Stats(); return st.Acked, st.BatchErrors }, n, 5*time.Second, 30*time.Second)
	o.Check(t, n)
}
