package runner

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
)

func TestOnceRefusesASecondStart(t *testing.T) {
	var o Once
	if err := o.Start("x"); err != nil {
		t.Fatalf("first Start = %v, want nil", err)
	}
	err := o.Start("x")
	if err == nil || err.Error() != "x: Consumer.Run called twice" {
		t.Fatalf("second Start = %v, want x: Consumer.Run called twice", err)
	}
}

func TestReconnectCountsConsecutiveBrokenSessions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Sessions 1-2 consume nothing, 3 consumes, 4-5 consume nothing, 6
	// ends with ctx done.
	consumed := []bool{false, false, true, false, false}
	var calls int
	var failures, waits []int
	session := func(context.Context) (bool, error) {
		calls++
		if calls > len(consumed) {
			cancel()
			return false, nil
		}
		return consumed[calls-1], errors.New("lost")
	}
	backoff := func(n int) time.Duration { waits = append(waits, n); return 0 }
	Reconnect(ctx, backoff, session, func(n int, err error) {
		if err == nil || err.Error() != "lost" {
			t.Errorf("broken got err %v, want lost", err)
		}
		failures = append(failures, n)
	})
	if want := []int{1, 2, 1, 2, 3}; !slices.Equal(failures, want) || !slices.Equal(waits, want) {
		t.Fatalf("failures %v, backoffs %v, want %v", failures, waits, want)
	}
	if calls != 6 {
		t.Fatalf("sessions run: %d, want 6", calls)
	}
}

func TestDefaultsFillOnlyZeroFields(t *testing.T) {
	var inbox txinbox.Config[struct{}]
	var maxDeliveries int
	var backoff txinbox.BackoffFunc
	var logger *slog.Logger
	Common[struct{}]{&inbox, &maxDeliveries, &backoff, &logger}.Defaults(txinbox.DefaultBackoff)
	if inbox.MaxBatchSize != 100 || inbox.MaxAttempts != 10 || maxDeliveries != 20 || backoff == nil ||
		logger != slog.Default() || inbox.Logger != logger {
		t.Fatalf("defaults: batch %d attempts %d deliveries %d backoff set %v logger %v inbox logger %v",
			inbox.MaxBatchSize, inbox.MaxAttempts, maxDeliveries, backoff != nil, logger, inbox.Logger)
	}
	own := slog.New(slog.DiscardHandler)
	inbox = txinbox.Config[struct{}]{MaxBatchSize: 7, MaxAttempts: 3}
	maxDeliveries, logger = 0, own
	Common[struct{}]{&inbox, &maxDeliveries, &backoff, &logger}.Defaults(nil)
	if inbox.MaxBatchSize != 7 || maxDeliveries != 6 || logger != own || inbox.Logger != own {
		t.Fatalf("kept: batch %d deliveries %d, logger kept %v, inbox logger %v", inbox.MaxBatchSize, maxDeliveries, logger == own, inbox.Logger == own)
	}
}

func TestWaitEndsWithCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Wait(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if err := Wait(context.Background(), 0); err != nil {
		t.Fatalf("Wait(0) = %v, want nil", err)
	}
}

func TestBatchesCountFailuresInARow(t *testing.T) {
	var b Batches
	ok := []txinbox.Result{{Outcome: txinbox.Processed}, {Outcome: txinbox.Duplicate}}
	fail := errors.New("db down")
	var got []int
	for _, err := range []error{fail, fail, nil, fail} {
		in := ok
		if err != nil {
			in = nil
		}
		res, n := b.Done(in, 2, err)
		if len(res) != 2 {
			t.Fatalf("Done returned %d results, want 2", len(res))
		}
		got = append(got, n)
	}
	if want := []int{1, 2, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("failures in a row %v, want %v", got, want)
	}
	if b.Errors.Load() != 3 || b.Outcomes.Load(txinbox.Processed) != 1 || b.Outcomes.Load(txinbox.Duplicate) != 1 {
		t.Fatalf("errors %d processed %d duplicates %d, want 3 1 1", b.Errors.Load(),
			b.Outcomes.Load(txinbox.Processed), b.Outcomes.Load(txinbox.Duplicate))
	}
}

// TestFailDelayFollowsTime: fourteen batches fail within five seconds (a
// short database outage seen by a busy consumer). The delay of the last
// one's messages must follow the five seconds, not the fourteen failures,
// which the backoff alone would turn into its five-minute ceiling.
func TestFailDelayFollowsTime(t *testing.T) {
	now := time.Unix(1000, 0)
	b := &Batches{now: func() time.Time { return now }}
	backoff := func(n int) time.Duration { return min(time.Second<<(n-1), 5*time.Minute) }
	var delay time.Duration
	for range 14 {
		if _, f := b.Done(nil, 1, errors.New("database down")); f == 0 {
			t.Fatal("Done of a failed batch returned 0 failures")
		}
		delay = b.FailDelay(backoff)
		now = now.Add(5 * time.Second / 14)
	}
	if delay > 5*time.Second || delay < time.Second {
		t.Errorf("delay after 14 failures in 5s = %s, want between backoff(1) and the 5s the outage lasted", delay)
	}
	b.Done(make([]txinbox.Result, 1), 1, nil)
	b.Done(nil, 1, errors.New("down again"))
	if d := b.FailDelay(backoff); d != time.Second {
		t.Errorf("first failure of a new outage: delay %s, want backoff(1) = 1s", d)
	}
}
