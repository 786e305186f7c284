package cli

import (
	"context"
	"testing"
)

// TestDrainHook: a batch's context outlives the cancellation of the run
// context (SIGTERM: the batch commits) and ends with the hard one (the
// shutdown timeout: the batch is cut).
func TestDrainHook(t *testing.T) {
	run, stop := context.WithCancel(context.Background())
	hard, cut := context.WithCancel(context.Background())
	bctx, end := drainHook{hard}.OnBatchStart(run, 10)
	stop()
	if bctx.Err() != nil {
		t.Fatal("the batch was cancelled with the run context")
	}
	cut()
	<-bctx.Done()
	end(nil)
	_, end = drainHook{hard}.OnBatchStart(context.Background(), 1)
	end(nil) // after the cut: no panic, nothing leaks
}
