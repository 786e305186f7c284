package sourcetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgstore"
)

// scope is the inbox scope of every consumer of the suite.
const scope = "sourcetest"

// fixture is one test's destination, inbox schema and observations.
type fixture struct {
	t      *testing.T
	h      Harness
	broker Broker
	desc   string
	schema string
	// url is the inbox database's URL with Harness.DatabaseURL, where
	// the schema is empty; "" otherwise.
	url    string
	pool   *pgxpool.Pool
	driver *pgstore.Driver
	seen   *observer
}

func newFixture(t *testing.T, h Harness) *fixture {
	t.Helper()
	admin := testdb.Require(t)
	f := &fixture{t: t, h: h, seen: newObserver()}
	if h.DatabaseURL != "" {
		f.url = testdb.WithDatabase(t, h.DatabaseURL, testdb.NewDatabase(t, admin))
		f.pool = openPool(t, f.url)
	} else {
		f.schema = testdb.NewSchema(t, admin)
		f.pool = testdb.PoolIn(t, f.schema, 8)
	}
	d, err := openInbox(context.Background(), f.pool)
	if err != nil {
		t.Fatal(err)
	}
	f.driver = d
	f.broker, f.desc = h.New(t)
	return f
}

// openPool opens a pool of 8 connections on url, closed at cleanup.
func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// openInbox migrates the inbox in the pool's schema and creates the
// effects table. It has no unique constraint: only the inbox stands
// between a redelivery and a second effect.
func openInbox(ctx context.Context, pool *pgxpool.Pool) (*pgstore.Driver, error) {
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		return nil, err
	}
	if err := d.Migrate(ctx); err != nil {
		return nil, err
	}
	_, err = pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS effects (seq bigserial, message_id text NOT NULL)`)
	return d, err
}

// insertEffect is the suite's side effect: one row per handled message.
func insertEffect(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO effects (message_id) VALUES ($1)`, m.ID)
	return err
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// inbox returns the processor configuration of the suite's consumers: the
// effect handler (then fail, if set), a short backoff and the observer.
func (f *fixture) inbox(fail func(*txinbox.Message) error) txinbox.Config[pgx.Tx] {
	return txinbox.Config[pgx.Tx]{
		Scope: scope,
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if err := insertEffect(ctx, tx, m); err != nil {
				return err
			}
			if fail != nil {
				return fail(m)
			}
			return nil
		},
		MaxBatchSize: 20,
		Backoff:      func(int) time.Duration { return 50 * time.Millisecond },
		Hooks:        []txinbox.Hook{f.seen},
		Logger:       quietLogger(),
	}
}

// consumer is one in-process consumer of the fixture's destination.
type consumer struct {
	cancel context.CancelFunc
	done   chan error
}

// startConsumer runs the source in a goroutine until stop.
func (f *fixture) startConsumer(inbox txinbox.Config[pgx.Tx]) *consumer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- f.broker.Consume(ctx, f.driver, inbox) }()
	f.t.Cleanup(c.stopQuietly)
	return c
}

func (c *consumer) stopQuietly() {
	c.cancel()
	<-c.done
	c.done <- nil // a second stop returns at once
}

// stop cancels the consumer and waits for it to return.
func (f *fixture) stop(c *consumer) {
	f.t.Helper()
	c.cancel()
	select {
	case err := <-c.done:
		c.done <- nil
		if err != nil {
			f.t.Errorf("Consume: %v", err)
		}
	case <-time.After(20 * time.Second):
		f.t.Fatal("Consume did not return 20s after its context was canceled")
	}
}

// publish publishes msgs or fails the test.
func (f *fixture) publish(msgs ...Message) {
	f.t.Helper()
	if err := f.broker.Publish(context.Background(), msgs...); err != nil {
		f.t.Fatalf("Publish: %v", err)
	}
}

// effects counts the committed effect rows per message id.
func (f *fixture) effects() map[string]int {
	f.t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT message_id, count(*) FROM effects GROUP BY message_id`)
	if err != nil {
		f.t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv [2]any, err error) {
		var id string
		var n int
		err = r.Scan(&id, &n)
		return [2]any{id, n}, err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	m := make(map[string]int, len(got))
	for _, kv := range got {
		m[kv[0].(string)] = kv[1].(int)
	}
	return m
}

// wantExactlyOnce checks one effect per id and no other effect.
func (f *fixture) wantExactlyOnce(ids []string) {
	f.t.Helper()
	got := f.effects()
	for _, id := range ids {
		if got[id] != 1 {
			f.t.Errorf("%s effects of %s: %d, want exactly 1", f.h.Name, id, got[id])
		}
	}
	if len(got) != len(ids) {
		f.t.Errorf("%s: effects for %d ids, want %d", f.h.Name, len(got), len(ids))
	}
}

// waitFor polls cond every 20ms until it holds, failing the test after
// timeout.
func (f *fixture) waitFor(what string, timeout time.Duration, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: timed out after %v waiting for %s (outcomes %v)", f.h.Name, timeout, what, f.seen.counts())
		}
		<-tick.C
	}
}

// wantPending polls the broker until want messages are not acked.
func (f *fixture) wantPending(want int) {
	f.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := f.broker.Pending(context.Background())
		if err == nil && n == want {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: %d messages pending 15s after the consumers stopped (err %v), want %d", f.h.Name, n, err, want)
		}
		<-tick.C
	}
}

// pendingAfterStop polls the broker, with no consumer running, until it
// holds nothing unacked or timeout passed, and returns the last count
// (-1 when the broker did not answer).
func (f *fixture) pendingAfterStop(timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		n, err := f.broker.Pending(context.Background())
		switch {
		case err == nil && n == 0:
			return 0
		case time.Now().After(deadline):
			if err != nil {
				return -1
			}
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func messages(prefix string, n int) ([]Message, []string) {
	msgs := make([]Message, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%04d", prefix, i)
		msgs[i] = Message{ID: ids[i], Body: fmt.Appendf(nil, `{"invoice":%q}`, ids[i])}
	}
	return msgs, ids
}

// observer counts the outcomes the consumers report, per outcome and per
// message id.
type observer struct {
	mu       sync.Mutex
	outcomes map[txinbox.Outcome]int
	byID     map[string][]txinbox.Outcome
}

func newObserver() *observer {
	return &observer{outcomes: map[txinbox.Outcome]int{}, byID: map[string][]txinbox.Outcome{}}
}

// OnOutcome records one outcome.
func (o *observer) OnOutcome(_ context.Context, m *txinbox.Message, res txinbox.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes[res.Outcome]++
	o.byID[m.ID] = append(o.byID[m.ID], res.Outcome)
}

func (o *observer) count(out txinbox.Outcome) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.outcomes[out]
}

// acked counts the outcomes that let the source ack.
func (o *observer) acked() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for out, c := range o.outcomes {
		if out.Ack() {
			n += c
		}
	}
	return n
}

func (o *observer) of(id string) []txinbox.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]txinbox.Outcome(nil), o.byID[id]...)
}

func (o *observer) counts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := map[string]int{}
	for out, c := range o.outcomes {
		m[out.String()] = c
	}
	return m
}
