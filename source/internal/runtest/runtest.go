// Package runtest runs the broker sources' consumers in their tests.
package runtest

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// Until starts each of runs (a Consumer's Run) in its own goroutine and
// polls stats until done holds for them or 20 seconds passed; then it
// cancels the runs and waits for them. It fails t when a run returns an
// error or done never held, and returns the last stats.
func Until[S any](t testing.TB, stats func() S, done func(S) bool, runs ...func(context.Context) error) S {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, len(runs))
	for _, run := range runs {
		go func() { errs <- run(ctx) }()
	}
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !done(stats()) && time.Now().Before(deadline) {
		<-tick.C
	}
	cancel()
	failed := false
	for range runs {
		if err := <-errs; err != nil {
			t.Error(err)
			failed = true
		}
	}
	if failed {
		t.FailNow()
	}
	s := stats()
	if !done(s) {
		t.Fatalf("not done after 20s: %+v", s)
	}
	return s
}

// AckRecorder is a txinbox.AckHook that keeps every AckInfo.
type AckRecorder struct {
	mu   sync.Mutex
	acks []txinbox.AckInfo
}

// OnAck implements txinbox.AckHook.
func (h *AckRecorder) OnAck(_ context.Context, info txinbox.AckInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acks = append(h.acks, info)
}

// Acks returns a copy of the AckInfos recorded so far.
func (h *AckRecorder) Acks() []txinbox.AckInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.acks)
}

// Processor builds a processor of cfg over d, failing t on an error.
func Processor[TTx any](t testing.TB, d store.Driver[TTx], cfg txinbox.Config[TTx]) *txinbox.Processor[TTx] {
	t.Helper()
	proc, err := txinbox.NewProcessor(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return proc
}

// ConfigProcessor is a processor for tests of a source's configuration
// (scope "test", the processor's defaults), over a SQLite inbox of its own.
func ConfigProcessor(t testing.TB) *txinbox.Processor[*sql.Tx] {
	t.Helper()
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return Processor(t, d, txinbox.Config[*sql.Tx]{Scope: "test",
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
}
