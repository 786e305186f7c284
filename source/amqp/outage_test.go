package amqp_test

import (
	"fmt"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox/internal/amqptest"
	"github.com/txinbox/txinbox/source/internal/runtest"
)

// TestCatchesUpSoonAfterADatabaseOutage: with the default backoff, the
// consumer's database (a private cluster) is down for 10 seconds while
// messages wait. Every message must be processed once, none
// dead-lettered, and the last one soon after the database is back: within
// 20 s (the count of failed batches alone held the last ones for the
// backoff's 30 s ceiling).
func TestCatchesUpSoonAfterADatabaseOutage(t *testing.T) {
	t.Parallel()
	amqptest.Require(t)
	o := runtest.NewOutage(t)
	b, _ := newBroker(t, true)
	f := &queueFixture{t: t, b: b.(*broker), pool: o.Pool, driver: o.Driver}
	const n = 300
	var ps []amqp091.Publishing
	for i := range n {
		ps = append(ps, amqp091.Publishing{MessageId: fmt.Sprint("m", i), Body: []byte("x")})
	}
	f.publish(ps...)
	cfg := f.config()
	cfg.Inbox.MaxBatchSize = 20
	c, err := newConsumer(t, o.Driver, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o.Stop(t)
	o.Ride(t, c.Run, func() (int64, int64) { st := c.Stats(); return st.Acked, st.BatchErrors }, n, 10*time.Second, 20*time.Second)
	o.Check(t, n)
}
