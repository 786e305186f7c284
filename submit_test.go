package txinbox_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
)

// TestSubmitLingersOnlyWhenEveryWorkerIsBusy: with a worker free, a
// message is flushed at once whatever Linger is (light traffic pays no
// wait); with Concurrency 1 the batch still lingers for more, and the
// messages that came within Linger share one transaction.
func TestSubmitLingersOnlyWhenEveryWorkerIsBusy(t *testing.T) {
	handler := func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }
	const linger = 5 * time.Second
	free, err := txinbox.NewProcessor(sqlitetest.Open(t), txinbox.Config[*sql.Tx]{Scope: "light", Concurrency: 2,
		Linger: linger, Handler: handler})
	if err != nil {
		t.Fatal(err)
	}
	defer free.Close()
	ctx := context.Background()
	start := time.Now()
	if res, err := free.Submit(ctx, &txinbox.Message{ID: "alone", Payload: []byte("x")}); err != nil || res.Outcome != txinbox.Processed {
		t.Fatalf("Submit = %v, %v; want processed", res.Outcome, err)
	}
	if took := time.Since(start); took >= linger {
		t.Errorf("Submit with a worker free took %v: it waited for Linger (%v)", took, linger)
	}

	hook := &recordingHook{}
	one, err := txinbox.NewProcessor(sqlitetest.Open(t), txinbox.Config[*sql.Tx]{Scope: "single", Concurrency: 1,
		Linger: 300 * time.Millisecond, Handler: handler, Hooks: []txinbox.Hook{hook}})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b", "c"} {
		wg.Go(func() {
			if _, err := one.Submit(ctx, &txinbox.Message{ID: id, Payload: []byte("x")}); err != nil {
				t.Errorf("Submit %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if len(hook.batches) != 1 || hook.batches[0].Size != 3 {
		t.Errorf("batches %+v, want the three messages in one lingering batch", hook.batches)
	}
}

type principalKey struct{}

// TestSubmitHandlersSeeTheirOwnContext: four callers (principals) submit
// at once to a processor with Concurrency 1 that lingers until its batch
// of four is full, so that the four share one batch; each handler sees
// its own caller's context values, never another's (they all saw the
// first caller's).
func TestSubmitHandlersSeeTheirOwnContext(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]any{}
	hook := &recordingHook{}
	p, err := txinbox.NewProcessor(sqlitetest.Open(t), txinbox.Config[*sql.Tx]{Scope: "principals", Concurrency: 1,
		MaxBatchSize: 4, Linger: time.Minute, Hooks: []txinbox.Hook{hook},
		Handler: func(ctx context.Context, _ *sql.Tx, m *txinbox.Message) error {
			mu.Lock()
			seen[m.ID] = ctx.Value(principalKey{})
			mu.Unlock()
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	for _, who := range []string{"alice", "bob", "carol", "dave"} {
		wg.Go(func() {
			ctx := context.WithValue(context.Background(), principalKey{}, who)
			if res, err := p.Submit(ctx, &txinbox.Message{ID: who, Payload: []byte(who)}); err != nil || res.Outcome != txinbox.Processed {
				t.Errorf("Submit %s = %v, %v", who, res.Outcome, err)
			}
		})
	}
	wg.Wait()
	hook.mu.Lock()
	if len(hook.batches) != 1 || hook.batches[0].Size != 4 {
		t.Errorf("batches %+v, want the four messages in one batch", hook.batches)
	}
	hook.mu.Unlock()
	for _, who := range []string{"alice", "bob", "carol", "dave"} {
		if seen[who] != who {
			t.Errorf("the handler of %s's message saw principal %v", who, seen[who])
		}
	}
}
