package jetstream_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/source/internal/runtest"
	"github.com/txinbox/txinbox/source/jetstream"
	"github.com/txinbox/txinbox/source/sourcetest"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	proc := runtest.ConfigProcessor(t)
	for _, tc := range []struct {
		cfg   jetstream.Config
		field string
	}{
		{jetstream.Config{Stream: "S", Consumer: "c"}, "URL"},
		{jetstream.Config{URL: "nats://x", Consumer: "c"}, "Stream"},
		{jetstream.Config{URL: "nats://x", Stream: "S"}, "Consumer"},
		{jetstream.Config{URL: "nats://x", Stream: "S", Consumer: "c", AckWait: time.Millisecond}, "AckWait"},
		{jetstream.Config{URL: "nats://x", Stream: "S", Consumer: "c", Linger: -1}, "Linger"},
		{jetstream.Config{URL: "nats://x", Stream: "S", Consumer: "c", MaxDeliveries: -1}, "MaxDeliveries"},
	} {
		_, err := jetstream.New(proc, tc.cfg)
		var ce *txinbox.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("New(%+v) = %v, want a ConfigError on %s", tc.cfg, err, tc.field)
		}
	}
}

// streamFixture is a stream of its own and an inbox.
type streamFixture struct {
	t      *testing.T
	b      *broker
	pool   *pgxpool.Pool
	driver *pgstore.Driver
}

func newStreamFixture(t *testing.T) *streamFixture {
	t.Helper()
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
	b, _ := newBroker(t)
	return &streamFixture{t: t, b: b.(*broker), pool: pool, driver: d}
}

func (f *streamFixture) config(h txinbox.HandlerFunc[pgx.Tx]) config {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return config{Config: jetstream.Config{URL: "nats://" + f.b.Direct, Stream: f.b.Stream, Consumer: "test",
		FilterSubjects: []string{f.b.Stream + ".invoices"}, Logger: quiet},
		Inbox: txinbox.Config[pgx.Tx]{Scope: "test", Handler: h, Logger: quiet}}
}

// config is a consumer's Config and its processor's.
type config struct {
	jetstream.Config
	Inbox txinbox.Config[pgx.Tx]
}

// newConsumer builds the processor of cfg over d, then the consumer.
func newConsumer(t testing.TB, d store.Driver[pgx.Tx], cfg config) (*jetstream.Consumer, error) {
	return jetstream.New(runtest.Processor(t, d, cfg.Inbox), cfg.Config)
}

func insertEffect(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO effects (message_id) VALUES ($1)`, m.ID)
	return err
}

// run runs a consumer until done holds for its stats.
func (f *streamFixture) run(cfg config, done func(jetstream.Stats) bool) jetstream.Stats {
	f.t.Helper()
	c, err := newConsumer(f.t, f.driver, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return runtest.Until(f.t, c.Stats, done, c.Run)
}

// A batch that runs longer than AckWait is kept alive with InProgress:
// JetStream does not redeliver it meanwhile.
func TestLongBatchKeptInProgress(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t)
	if err := f.b.Publish(context.Background(), sourcetest.Message{ID: "slow-1", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	cfg := f.config(func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		calls.Add(1)
		select { // the partner's endpoint takes 2.5s, longer than the 1s AckWait
		case <-time.After(2500 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		return insertEffect(ctx, tx, m)
	})
	cfg.AckWait = time.Second
	s := f.run(cfg, func(s jetstream.Stats) bool { return s.Acked == 1 })
	if s.InProgress == 0 || calls.Load() != 1 || s.Duplicates != 0 {
		t.Errorf("stats %+v, handler calls %d: want InProgress renewals and one delivery", s, calls.Load())
	}
}

// NumDelivered bounds the deliveries: a message whose consumers kept dying
// on it is dead-lettered without running the handler.
func TestMaxDeliveriesDeadLetters(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t)
	ctx := context.Background()
	if err := f.b.Publish(ctx, sourcetest.Message{ID: "crashes-consumers", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("nats://" + f.b.Direct)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	cfg := f.config(insertEffect)
	cfg.MaxDeliveries = 2
	cons, err := js.CreateOrUpdateConsumer(ctx, f.b.Stream, natsjs.ConsumerConfig{Durable: "test", AckPolicy: natsjs.AckExplicitPolicy,
		FilterSubjects: cfg.FilterSubjects})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // two consumers received it and died
		batch, err := cons.Fetch(1, natsjs.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			m.Nak() //nolint:errcheck // as if the consumer died: redelivered at once
		}
	}
	s := f.run(cfg, func(s jetstream.Stats) bool { return s.Acked == 1 })
	dls, err := f.driver.ListDeadLetters(ctx, store.ListFilter{})
	if err != nil || s.DeadLettered != 1 || len(dls) != 1 || !strings.Contains(dls[0].LastError, "delivered 3 times, more than MaxDeliveries (2)") {
		t.Errorf("stats %+v, dead letters %+v (%v)", s, dls, err)
	}
}
