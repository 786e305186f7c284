package txinbox

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The context a commit is sent with (commitContext): the caller's cancel
// does not reach a sent commit; once the caller's context ended, the
// commit is awaited for the wait, then abandoned with ErrCommitUnknown;
// while the caller's context lives, the commit is never cut.
func TestCommitContext(t *testing.T) {
	t.Run("a cancel does not reach a sent commit", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cctx, done := commitContextWithin(ctx, time.Hour)
		defer done()
		cancel()
		select {
		case <-cctx.Done():
			t.Fatalf("the commit's context ended with the caller's: %v", context.Cause(cctx))
		case <-time.After(100 * time.Millisecond): // a wrong answer comes at once
		}
	})
	t.Run("abandoned after the wait, with ErrCommitUnknown", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cctx, done := commitContextWithin(ctx, 20*time.Millisecond)
		defer done()
		cancel()
		select {
		case <-cctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the commit's context did not end after the wait")
		}
		if cause := context.Cause(cctx); !errors.Is(cause, ErrCommitUnknown) {
			t.Errorf("cause %v, want ErrCommitUnknown", cause)
		}
		if err := commitErr(cctx, context.Canceled); !errors.Is(err, ErrCommitUnknown) || !errors.Is(err, context.Canceled) {
			t.Errorf("commitErr = %v, want the commit's error and ErrCommitUnknown", err)
		}
	})
	t.Run("not cut while the caller's context lives", func(t *testing.T) {
		cctx, done := commitContextWithin(context.Background(), 20*time.Millisecond)
		defer done()
		select {
		case <-cctx.Done():
			t.Fatalf("a slow commit of a live context was cut: %v", context.Cause(cctx))
		case <-time.After(200 * time.Millisecond): // ten times the wait
		}
	})
	t.Run("an answered commit is not unknown", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cctx, done := commitContextWithin(ctx, time.Hour)
		cancel()
		done() // the commit answered
		if err := commitErr(cctx, errors.New("refused")); errors.Is(err, ErrCommitUnknown) {
			t.Errorf("commitErr = %v: an answered commit called unknown", err)
		}
	})
	t.Run("ended before sending: not sent", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		cctx, done := commitContextWithin(ctx, time.Hour)
		defer done()
		if cctx.Err() == nil {
			t.Error("a context that ended before the commit gave a live commit context: the commit would be sent")
		}
	})
}
