package cli

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDrainHook: a batch's context outlives the cancellation of the run
// context (SIGTERM: the batch commits) and ends with the hard one (the
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

// TestStopHeldBySourceNotBatch: SIGTERM while a source does not return
// (a Kafka consumer-group rebalance that never ends, say) but no batch is
// in its transaction: serve names the source, says nothing was in flight
// and exits 0. With a batch in flight it says so and exits 1.
func TestStopHeldBySourceNotBatch(t *testing.T) {
	for _, c := range []struct {
		inFlight int64
		code     int
		want     string
	}{
		{0, ExitOK, "kafka did not stop within 200ms, waiting on its broker (no batch was in flight: nothing is lost)"},
		{1, ExitFailure, "1 batches still in flight after 200ms were cut (sources not stopped: kafka)"},
	} {
		release := make(chan struct{})
		stuck := &serveSource{name: "kafka", run: func(ctx context.Context) error {
			<-ctx.Done()
			<-release // the rebalance that holds the client
			return nil
		}}
		var out, errb strings.Builder
		ctx, stop := context.WithCancel(context.Background())
		o := &serveOptions{ShutdownTimeout: 200 * time.Millisecond}
		o.ops.ready = new(atomic.Bool)
		r := &serveRun{env: &Env{Stdout: &out, Stderr: &errb}, o: o, sources: []*serveSource{stuck},
			cutBatches: func() {}, inFlight: new(atomic.Int64)}
		r.inFlight.Store(c.inFlight)
		stop()
		if code := r.run(ctx); code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("in flight %d: exit %d, stderr %q; want %d and %q", c.inFlight, code, errb.String(), c.code, c.want)
		}
		close(release)
	}
}
