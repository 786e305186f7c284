package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txinbox/txinbox/purge"
)

// TestDrainHook: a batch's context outlives the cancellation of the run
// context (a stop: the batch commits) and ends with the hard one (the
// shutdown timeout: the batch is cut).
func TestDrainHook(t *testing.T) {
	run, stop := context.WithCancel(context.Background())
	hard, cut := context.WithCancel(context.Background())
	bctx, end := drainHook{hard, new(atomic.Int64)}.OnBatchStart(run, 10)
	stop()
	if bctx.Err() != nil {
		t.Fatal("the batch was cancelled with the run context")
	}
	cut()
	<-bctx.Done()
	end(nil)
	_, end = drainHook{hard, new(atomic.Int64)}.OnBatchStart(context.Background(), 1)
	end(nil) // after the cut: no panic, nothing leaks
}

// stuckSource stops only when released, like a Kafka client held by a
// consumer-group rebalance that never ends.
type stuckSource struct{ release chan struct{} }

func (s stuckSource) Run(ctx context.Context) error {
	<-ctx.Done()
	<-s.release
	return nil
}

// TestStopHeldBySourceNotBatch: a stop while a source does not return but
// no batch is in its transaction names the source, says nothing was in
// flight and returns nil. With a batch in flight Run says so and returns a
// *CutError.
func TestStopHeldBySourceNotBatch(t *testing.T) {
	for _, c := range []struct {
		inFlight int64
		wantErr  bool
		want     string
	}{
		{0, false, "kafka did not stop within 200ms, waiting on its broker (no batch was in flight: nothing is lost)"},
		{1, true, "1 batches still in flight after 200ms were cut (sources not stopped: kafka)"},
	} {
		defer func(g, w time.Duration) { cutGrace, commitWait = g, w }(cutGrace, commitWait)
		cutGrace, commitWait = 100*time.Millisecond, 100*time.Millisecond
		release := make(chan struct{})
		var log strings.Builder
		srv, err := New(Config{ShutdownTimeout: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil)),
			Sources: []Source{{Name: "kafka", Scope: "kafka", Source: stuckSource{release}}}})
		if err != nil {
			t.Fatal(err)
		}
		srv.inFlight.Store(c.inFlight)
		ctx, stop := context.WithCancel(context.Background())
		stop()
		err = srv.Run(ctx)
		var cut *CutError
		text := log.String()
		if err != nil {
			text = err.Error()
		}
		if errors.As(err, &cut) != c.wantErr || !strings.Contains(text, c.want) {
			t.Errorf("in flight %d: error %v, log %q; want cut %v and %q", c.inFlight, err, log.String(), c.wantErr, c.want)
		}
		close(release)
	}
}

func TestPurgeScopesOnlyWhenRetentionsDiffer(t *testing.T) {
	day := 24 * time.Hour
	src := func(name string, keep time.Duration) Source {
		return Source{Name: name, Scope: name, Source: stuckSource{}, Retention: Retention{Keep: keep}}
	}
	srv, err := New(Config{Retention: Retention{Keep: 30 * day}, Sources: []Source{src("as4", 0), src("kafka", 0)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.PurgeScopes(); got != nil {
		t.Errorf("every scope at the default retention: %v, want none (one all-scope purge)", got)
	}
	srv, err = New(Config{Retention: Retention{Keep: 30 * day}, Sources: []Source{src("as4", 0), src("kafka", 60*day)}})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.PurgeScopes()
	want := []purge.ScopeRetention{{Scope: "as4", Retention: 30 * day}, {Scope: "kafka", Retention: 60 * day}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("kafka at 60d: %+v, want as4 30d and kafka 60d", got)
	}
	// Two sources of one scope: one pass, at the longer retention (the
	// shorter would purge the rows the other's broker can still resend).
	shared := Source{Name: "amqp", Scope: "kafka", Source: stuckSource{}, Retention: Retention{Keep: 10 * day}}
	srv, err = New(Config{Retention: Retention{Keep: 30 * day}, Sources: []Source{src("kafka", 60*day), shared}})
	if err != nil {
		t.Fatal(err)
	}
	got = srv.PurgeScopes()
	if len(got) != 1 || got[0] != (purge.ScopeRetention{Scope: "kafka", Retention: 60 * day}) {
		t.Errorf("kafka at 60d and amqp into the same scope at 10d: %+v, want kafka 60d once", got)
	}
	// An endpoint writing a scope per route (serve's ingress): each
	// route's scope is purged, at the default retention here.
	ingress := Endpoint{Name: "ingress", Listen: "127.0.0.1:0", Handler: http.NotFoundHandler(), Scope: "ingest",
		Scopes: []string{"ingest:github", "ingest:stripe"}}
	srv, err = New(Config{Retention: Retention{Keep: 30 * day}, Sources: []Source{src("kafka", 60*day)}, Endpoints: []Endpoint{ingress}})
	if err != nil {
		t.Fatal(err)
	}
	got = srv.PurgeScopes()
	want = []purge.ScopeRetention{{Scope: "ingest:github", Retention: 30 * day}, {Scope: "ingest:stripe", Retention: 30 * day},
		{Scope: "kafka", Retention: 60 * day}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("ingress routes beside kafka at 60d: %+v, want %+v", got, want)
	}
}

// TestStopAwaitsCutCommit: a stop that cuts a batch returns only once the
// batch left its transaction (its COMMIT's outcome known), even past the
// grace given to a source stuck on its broker.
func TestStopAwaitsCutCommit(t *testing.T) {
	defer func(g time.Duration) { cutGrace = g }(cutGrace)
	cutGrace = 20 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	srv, err := New(Config{ShutdownTimeout: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Sources: []Source{{Name: "kafka", Scope: "kafka", Source: stuckSource{release}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.inFlight.Store(1)
	const commitEnds = 400 * time.Millisecond
	var ended atomic.Bool
	time.AfterFunc(commitEnds, func() { ended.Store(true); srv.inFlight.Add(-1) })
	ctx, stop := context.WithCancel(context.Background())
	stop()
	err = srv.Run(ctx)
	if !ended.Load() {
		t.Errorf("Run returned (%v) while the cut batch was still in its transaction", err)
	}
	var cut *CutError
	if !errors.As(err, &cut) || cut.Batches != 1 {
		t.Errorf("Run = %v, want a *CutError of 1 batch", err)
	}
}
