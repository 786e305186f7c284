package sourcetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
)

// scope is the inbox scope of every consumer of the suite.
const scope = "sourcetest"

// fixture is one test's destination, inbox database and observations.
type fixture struct {
	t      *testing.T
	h      Harness
	broker Broker
	desc   string
	db     testDatabase
	seen   *observer
}

func newFixture(t *testing.T, h Harness) *fixture {
	t.Helper()
	f := &fixture{t: t, h: h, seen: newObserver(), db: newTestDatabase(t, h)}
	f.broker, f.desc = h.New(t)
	return f
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// inbox returns the processor of the suite's consumers: the effect
// handler (then fail, if set), a short backoff and the observer.
func (f *fixture) inbox(fail func(*txinbox.Message) error) Inbox {
	return Inbox{
		Scope:  scope,
		Logger: quietLogger(),
		s: settings{
			handler: func(ctx context.Context, tx txn, m *txinbox.Message) error {
				if err := tx.effect(ctx, m.ID); err != nil {
					return err
				}
				if fail != nil {
					return fail(m)
				}
				return nil
			},
			maxBatchSize: 20,
			backoff:      func(int) time.Duration { return 50 * time.Millisecond },
			hooks:        []txinbox.Hook{f.seen},
		},
		db: f.db,
	}
}

// consumer is one in-process consumer of the fixture's destination.
type consumer struct {
	cancel context.CancelFunc
	done   chan error
}

// startConsumer runs the source in a goroutine until stop.
func (f *fixture) startConsumer(inbox Inbox) *consumer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- f.broker.Consume(ctx, inbox) }()
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
	m, err := f.db.effects(context.Background())
	if err != nil {
		f.t.Fatal(err)
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
