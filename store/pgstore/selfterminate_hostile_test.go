package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestSelfTerminateOneConnection: a pool of one connection, and a
// handler that ends its own session in the redo a message at a time (a
// batch handler; offsets as the inbox): the ping after the loss must not
// wait for the lost connection that the redo's transaction still holds,
// or every such message is taken for an outage and fails its batch forever.
func TestSelfTerminateOneConnection(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"batch-handler", "offsets"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newFenv(t, testdb.Require(t), testdb.URL(), func(c *pgxpool.Config) { c.MaxConns = 1 })
			batch := ids("one", 3)
			handle := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				if err := insertEffect(ctx, tx, m); err != nil {
					return err
				}
				if m.ID == batch[1] {
					return terminateOwnBackend(ctx, tx)
				}
				return nil
			}
			p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 1, BatchHandler: perMessage(handle)})
			want := each(batch, processedOnce)
			want[batch[1]] = rows{Attempts: 1, DeadLetters: 1}
			if mode == "offsets" {
				want = map[string]rows{batch[0]: {Effects: 1}, batch[1]: {Attempts: 1, DeadLetters: 1}, batch[2]: {Effects: 1}}
			}
			_, _, err := processIn(e, p, mode, batch)
			if err != nil {
				t.Fatalf("%v (the database answers: no outage)", err)
			}
			e.wantTables(want)
		})
	}
}

// TestSelfTerminateHostile: handlers that end their own session in
// various ways; the others of the batch commit exactly once each, and the
// killers are counted one attempt per delivery at most.
func TestSelfTerminateHostile(t *testing.T) {
	t.Parallel()
	P, R, X := txinbox.Processed, txinbox.Retry, txinbox.DeadLettered
	for _, c := range []struct {
		name        string
		ids         []string
		killers     map[string]bool
		firstOnly   bool // a killer kills on its first call only
		maxAttempts int
		want        []txinbox.Outcome
		tables      map[string]rows
	}{
		{"first-call-only", []string{"a", "k", "b"}, map[string]bool{"k": true}, true, 2,
			[]txinbox.Outcome{P, P, P}, map[string]rows{"a": processedOnce, "k": processedOnce, "b": processedOnce}},
		{"two-suspects", []string{"a", "k1", "b", "k2", "c"}, map[string]bool{"k1": true, "k2": true}, false, 2,
			[]txinbox.Outcome{P, R, P, R, P}, map[string]rows{"a": processedOnce, "b": processedOnce, "c": processedOnce,
				"k1": {Attempts: 1}, "k2": {Attempts: 1}}},
		{"repeated-id", []string{"a", "k", "b", "k", "c"}, map[string]bool{"k": true}, false, 1,
			[]txinbox.Outcome{P, X, P, R, P}, map[string]rows{"a": processedOnce, "b": processedOnce, "c": processedOnce,
				"k": {Attempts: 1, DeadLetters: 1}}},
		{"max-attempts-1", []string{"a", "k", "b"}, map[string]bool{"k": true}, false, 1,
			[]txinbox.Outcome{P, X, P}, map[string]rows{"a": processedOnce, "b": processedOnce, "k": {Attempts: 1, DeadLetters: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
			calls := map[string]int{}
			p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: c.maxAttempts, Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				calls[m.ID]++
				if err := insertEffect(ctx, tx, m); err != nil {
					return err
				}
				if c.killers[m.ID] && (!c.firstOnly || calls[m.ID] == 1) {
					return terminateOwnBackend(ctx, tx)
				}
				return nil
			}})
			msgs := make([]*txinbox.Message, len(c.ids))
			for i, id := range c.ids {
				msgs[i] = &txinbox.Message{ID: id, Payload: []byte(id)}
			}
			res, err := p.Process(e.ctx, msgs)
			if err != nil {
				t.Fatalf("Process: %v (the database answers: no outage)", err)
			}
			for i, r := range res {
				if r.Outcome != c.want[i] {
					t.Errorf("%s: %v (%v), want %v", c.ids[i], r.Outcome, r.Err, c.want[i])
				}
			}
			e.wantTables(c.tables)
		})
	}
}

// TestSelfTerminateCancelled: a handler that cancels the context and ends
// its own session: no ping, no blame; nothing commits, Process fails.
func TestSelfTerminateCancelled(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 1, Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		if err := insertEffect(ctx, tx, m); err != nil {
			return err
		}
		if m.ID == "k" {
			_, err := tx.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
			cancel()
			return err
		}
		return nil
	}})
	res, err := p.Process(ctx, messages([]string{"a", "k", "b"}))
	wantNotCommitted(t, res, err, 3)
	e.wantTables(nil)
}

// TestOffsetsFirstLossInTheRedoNotBlamed: offsets as the inbox; another
// message's plain failure makes the batch be redone message by message,
// and in that redo a message loses its connection for the first time
// (an outage that struck while it ran looks the same): it is not blamed
// (MaxAttempts 1 would dead-letter it), it runs again and is processed.
func TestOffsetsFirstLossInTheRedoNotBlamed(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
	batch := ids("redo", 5)
	calls := map[string]int{}
	p := e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 1, Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		calls[m.ID]++
		if err := insertEffect(ctx, tx, m); err != nil {
			return err
		}
		switch {
		case m.ID == batch[3]:
			return errors.New("plain failure")
		case m.ID == batch[1] && calls[m.ID] == 2:
			return terminateOwnBackend(ctx, tx)
		}
		return nil
	}})
	cp := txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "failures", Partition: 0, Positions: []int64{0, 1, 2, 3, 4}}, Saved: -1}
	if _, _, err := p.ProcessOffsets(e.ctx, messages(batch), cp); err != nil {
		t.Fatalf("ProcessOffsets: %v (the database answers: no outage)", err)
	}
	want := each(batch, rows{Effects: 1})
	want[batch[3]] = rows{Attempts: 1, DeadLetters: 1}
	e.wantTables(want)
}

// TestSelfTerminateSaturatedPool: a handler ends its own session while
// handlers of other batches hold every connection of the pool for longer
// than the processor waits for the database to answer. The ping must not
// queue for a pooled connection: the database answers, so the killer is
// isolated and blamed, and its neighbours commit, instead of the batch
// failing as an outage (and again at every delivery).
func TestSelfTerminateSaturatedPool(t *testing.T) {
	t.Parallel()
	e := newFenv(t, testdb.Require(t), testdb.URL(), func(c *pgxpool.Config) { c.MaxConns = 2 })
	const sleep = "SELECT pg_sleep(7)"
	var startSecond sync.Once
	sleepers := make(chan error, 2)
	var p *txinbox.Processor[pgx.Tx]
	handle := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		switch {
		case strings.HasPrefix(m.ID, "sleeper"):
			if _, err := tx.Exec(ctx, sleep); err != nil {
				return err
			}
		case m.ID == "killer":
			// The second sleeper queues for a connection now, and takes
			// the one this handler's session leaves.
			startSecond.Do(func() {
				go func() { _, err := p.Process(e.ctx, messages([]string{"sleeper-2"})); sleepers <- err }()
				time.Sleep(300 * time.Millisecond)
			})
			return terminateOwnBackend(ctx, tx)
		}
		return insertEffect(ctx, tx, m)
	}
	p = e.processor(nil, txinbox.Config[pgx.Tx]{MaxAttempts: 1, BatchHandler: perMessage(handle)})
	go func() { _, err := p.Process(e.ctx, messages([]string{"sleeper-1"})); sleepers <- err }()
	waitUntil(t, "the first sleeper holds a connection", func() (bool, error) {
		var n int
		err := e.check.QueryRow(e.ctx, "SELECT count(*) FROM pg_stat_activity WHERE query = $1 AND pid <> pg_backend_pid()", sleep).Scan(&n)
		return n == 1, err
	})
	batch := []string{"neighbour-1", "killer", "neighbour-2"}
	if _, err := p.Process(e.ctx, messages(batch)); err != nil {
		t.Fatalf("%v (the database answered: no outage)", err)
	}
	for range 2 {
		if err := <-sleepers; err != nil {
			t.Error(err)
		}
	}
	e.wantTables(map[string]rows{"neighbour-1": processedOnce, "neighbour-2": processedOnce, "killer": {Attempts: 1, DeadLetters: 1},
		"sleeper-1": processedOnce, "sleeper-2": processedOnce})
}
