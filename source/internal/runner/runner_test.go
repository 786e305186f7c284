package runner

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
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
	var maxDeliveries int
	var backoff txinbox.BackoffFunc
	var logger *slog.Logger
	Common{&maxDeliveries, &backoff, &logger}.Defaults(txinbox.Settings{MaxAttempts: 10}, txinbox.DefaultBackoff)
	if maxDeliveries != 20 || backoff == nil || logger != slog.Default() {
		t.Fatalf("defaults: deliveries %d backoff set %v logger %v", maxDeliveries, backoff != nil, logger)
	}
	own := slog.New(slog.DiscardHandler)
	maxDeliveries, logger = 0, own
	Common{&maxDeliveries, &backoff, &logger}.Defaults(txinbox.Settings{MaxAttempts: 3}, nil)
	if maxDeliveries != 6 || logger != own {
		t.Fatalf("kept: deliveries %d, logger kept %v", maxDeliveries, logger == own)
	}
	maxDeliveries = 7
	Common{&maxDeliveries, &backoff, &logger}.Defaults(txinbox.Settings{MaxAttempts: 3}, nil)
	if maxDeliveries != 7 {
		t.Fatalf("MaxDeliveries 7 became %d", maxDeliveries)
	}
}

// TestConfigureNamesTheFirstBadField: the error of New is a
// txinbox.ConfigError on the first invalid field, after the defaults read
// from the processor's settings, and a nil processor is refused.
func TestConfigureNamesTheFirstBadField(t *testing.T) {
	type cfg struct{ A, B int }
	defaults := func(c cfg, s txinbox.Settings) cfg {
		if c.A == 0 {
			c.A = s.MaxBatchSize
		}
		return c
	}
	validate := func(c cfg, _ txinbox.Settings, v *Checks) {
		v.Require(c.A <= 100, "A", "at most 100")
		v.Require(c.B >= 0, "B", "must not be negative")
	}
	proc := newProcessor(t, txinbox.Config[*sql.Tx]{MaxBatchSize: 50})
	got, err := Configure("x", proc, cfg{}, defaults, validate)
	if err != nil || got.A != 50 {
		t.Fatalf("Configure = %+v, %v; want A 50 from the processor", got, err)
	}
	_, err = Configure("x", proc, cfg{A: 101, B: -1}, defaults, validate)
	var ce *txinbox.ConfigError
	if !errors.As(err, &ce) || ce.Field != "A" || !strings.HasPrefix(err.Error(), "x: ") {
		t.Fatalf("Configure = %v, want a ConfigError on A prefixed x:", err)
	}
	if _, err := Configure[cfg]("x", nil, cfg{}, defaults, validate); err == nil || !strings.Contains(err.Error(), "processor is nil") {
		t.Fatalf("Configure(nil processor) = %v", err)
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

// TestEveryStopsAndWaits: f runs on each tick until stop, and not after
// stop returned.
func TestEveryStopsAndWaits(t *testing.T) {
	var n atomic.Int32
	stop := Every(time.Millisecond, func() { n.Add(1) })
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("f did not run 3 times within 5s")
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	after := n.Load()
	time.Sleep(10 * time.Millisecond)
	if n.Load() != after {
		t.Errorf("f ran %d more times after stop", n.Load()-after)
	}
}
