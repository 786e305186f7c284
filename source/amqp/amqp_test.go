package amqp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/amqptest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/source/amqp"
	"github.com/txinbox/txinbox/source/internal/runtest"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	proc := runtest.ConfigProcessor(t)
	for _, tc := range []struct {
		cfg   amqp.Config
		field string
	}{
		{amqp.Config{Queue: "q"}, "URL"},
		{amqp.Config{URL: "amqp://x"}, "Queue"},
		{amqp.Config{URL: "amqp://x", Queue: "q", Prefetch: 10}, "Prefetch"},
		{amqp.Config{URL: "amqp://x", Queue: "q", Linger: -1}, "Linger"},
		{amqp.Config{URL: "amqp://x", Queue: "q", MaxDeliveries: -1}, "MaxDeliveries"},
		{amqp.Config{URL: "amqp://x", Queue: "q", Heartbeat: time.Millisecond}, "Heartbeat"},
	} {
		_, err := amqp.New(proc, tc.cfg)
		var ce *txinbox.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("New(%+v) = %v, want a ConfigError on %s", tc.cfg, err, tc.field)
		}
	}
}

// queueFixture is a quorum queue of its own and an inbox.
type queueFixture struct {
	t      *testing.T
	b      *broker
	pool   *pgxpool.Pool
	driver *pgstore.Driver
}

func newQueueFixture(t *testing.T) *queueFixture {
	t.Helper()
	amqptest.Require(t)
	admin := testdb.Require(t)
	pool := testdb.PoolIn(t, testdb.NewSchema(t, admin), 4)
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `CREATE TABLE effects (message_id text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	b, _ := newBroker(t, true)
	return &queueFixture{t: t, b: b.(*broker), pool: pool, driver: d}
}

// publish publishes ps with publisher confirms: an unconfirmed publish to
// a quorum queue may be dropped when its connection closes at once.
func (f *queueFixture) publish(ps ...amqp091.Publishing) {
	f.t.Helper()
	f.b.channel(f.t, func(ch *amqp091.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		for _, p := range ps {
			conf, err := ch.PublishWithDeferredConfirmWithContext(context.Background(), "", f.b.Queue, true, false, p)
			if err != nil {
				return err
			}
			if ok, err := conf.WaitContext(context.Background()); err != nil || !ok {
				return fmt.Errorf("publish not confirmed: %v", err)
			}
		}
		return nil
	})
}

func (f *queueFixture) config() config {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return config{Config: amqp.Config{URL: f.b.Direct, Queue: f.b.Queue, Logger: quiet},
		Inbox: txinbox.Config[pgx.Tx]{Scope: f.b.Queue, Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			_, err := tx.Exec(ctx, `INSERT INTO effects (message_id) VALUES ($1)`, m.ID)
			return err
		}, Logger: quiet}}
}

// config is a consumer's Config and its processor's.
type config struct {
	amqp.Config
	Inbox txinbox.Config[pgx.Tx]
}

// newConsumer builds the processor of cfg over d, then the consumer.
func newConsumer(t testing.TB, d store.Driver[pgx.Tx], cfg config) (*amqp.Consumer, error) {
	return amqp.New(runtest.Processor(t, d, cfg.Inbox), cfg.Config)
}

// run runs a consumer until done holds for its stats.
func (f *queueFixture) run(cfg config, done func(amqp.Stats) bool) amqp.Stats {
	f.t.Helper()
	c, err := newConsumer(f.t, f.driver, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return runtest.Until(f.t, c.Stats, done, c.Run)
}

// A full batch whose deliveries may all be acked is acked with one
// multiple-ack; prefetch follows the batch size.
func TestBatchesAreAckedWithOneMultipleAck(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	var ps []amqp091.Publishing
	for i := range 100 {
		ps = append(ps, amqp091.Publishing{MessageId: fmt.Sprintf("m-%03d", i), Body: []byte("x")})
	}
	f.publish(ps...)
	cfg := f.config()
	cfg.Inbox.MaxBatchSize = 25
	s := f.run(cfg, func(s amqp.Stats) bool { return s.Acked == 100 })
	if s.MultipleAcks == 0 || s.MultipleAcks > 100/2 {
		t.Errorf("stats %+v: want batches acked with a multiple-ack each", s)
	}
}

// A message without message_id is dead-lettered with the reason, unless a
// content key is configured.
func TestMissingKeyAndContentKey(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	f.publish(amqp091.Publishing{Body: []byte("UNB+UNOC:3+SENDER+RECEIVER+240101:1200+REF-1'")})
	s := f.run(f.config(), func(s amqp.Stats) bool { return s.Acked == 1 })
	if s.DeadLettered != 1 {
		t.Errorf("stats %+v: want the message without id dead-lettered", s)
	}
	dls, err := f.driver.ListDeadLetters(context.Background(), store.ListFilter{})
	if err != nil || len(dls) != 1 || dls[0].Reason != "no message id" {
		t.Fatalf("dead letters %+v, %v: want one with reason \"no message id\"", dls, err)
	}
	f.publish(amqp091.Publishing{Body: []byte("UNB+UNOC:3+SENDER+RECEIVER+240101:1200+REF-2'")})
	cfg := f.config()
	cfg.ContentKey = func(d *amqp091.Delivery) string {
		parts := strings.Split(strings.TrimSuffix(string(d.Body), "'"), "+")
		return "SENDER/" + parts[len(parts)-1]
	}
	s = f.run(cfg, func(s amqp.Stats) bool { return s.Acked == 1 })
	var id string
	if err := f.pool.QueryRow(context.Background(), `SELECT message_id FROM effects`).Scan(&id); err != nil || s.Processed != 1 || id != "SENDER/REF-2" {
		t.Errorf("stats %+v, effect %q (%v): want processed under the content key SENDER/REF-2", s, id, err)
	}
}

// On a quorum queue x-delivery-count bounds the deliveries: a message whose
// consumers kept dying on it is dead-lettered without running the handler.
func TestQuorumDeliveryCountBoundsAttempts(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	f.publish(amqp091.Publishing{MessageId: "crashes-consumers", Body: []byte("x")})
	for range 2 { // two consumers received it and died without an ack
		f.b.channel(t, func(ch *amqp091.Channel) error {
			_, ok, err := ch.Get(f.b.Queue, false)
			if !ok && err == nil {
				err = errors.New("queue empty")
			}
			return err
		})
	}
	cfg := f.config()
	cfg.MaxDeliveries = 2
	s := f.run(cfg, func(s amqp.Stats) bool { return s.Acked == 1 })
	dls, err := f.driver.ListDeadLetters(context.Background(), store.ListFilter{})
	if err != nil || s.DeadLettered != 1 || len(dls) != 1 || !strings.Contains(dls[0].LastError, "delivered 3 times, more than MaxDeliveries (2)") {
		t.Errorf("stats %+v, dead letters %+v (%v)", s, dls, err)
	}
}
