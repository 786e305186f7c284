// Package runner holds the skeleton the broker sources (amqp, jetstream,
// sqs) share: the defaults of the Config fields they all have, the
// processor with its delivery-count guard, the once-only Run and the loop
// that opens a broken session again after a backoff.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/deliveries"
	"github.com/txinbox/txinbox/store"
)

// Common points at the Config fields every source has, so that Defaults
// fills them in place.
type Common[TTx any] struct {
	Inbox         *txinbox.Config[TTx]
	MaxDeliveries *int
	ErrorBackoff  *txinbox.BackoffFunc
	Logger        **slog.Logger
}

// Defaults fills the shared defaults: Inbox.MaxBatchSize 100,
// Inbox.MaxAttempts 10, MaxDeliveries 2 × Inbox.MaxAttempts, ErrorBackoff
// backoff, Logger slog.Default() and Inbox.Logger Logger. A source sets
// Inbox.Scope before and its own fields after.
func (c Common[TTx]) Defaults(backoff txinbox.BackoffFunc) {
	if c.Inbox.MaxBatchSize == 0 {
		c.Inbox.MaxBatchSize = 100
	}
	if c.Inbox.MaxAttempts == 0 {
		c.Inbox.MaxAttempts = 10
	}
	if *c.MaxDeliveries == 0 {
		*c.MaxDeliveries = 2 * c.Inbox.MaxAttempts
	}
	if *c.ErrorBackoff == nil {
		*c.ErrorBackoff = backoff
	}
	if *c.Logger == nil {
		*c.Logger = slog.Default()
	}
	if c.Inbox.Logger == nil {
		c.Inbox.Logger = *c.Logger
	}
}

// NewProcessor guards the handler of *inbox with deliveries.Guard (header
// countHeader, verb, maxDeliveries), stores the guarded handler back in
// *inbox and returns the processor and the guard's Excuses (the source
// adds the messages of every batch that failed as a whole, and settles
// every batch), or an error prefixed "<pkg>: Config.Inbox: ".
func NewProcessor[TTx any](pkg string, driver store.Driver[TTx], inbox *txinbox.Config[TTx], countHeader, verb string,
	maxDeliveries int) (*txinbox.Processor[TTx], *deliveries.Excuses, error) {
	excused := deliveries.NewExcuses()
	inbox.Handler, inbox.BatchHandler = deliveries.Guard(*inbox, countHeader, verb, maxDeliveries, excused)
	proc, err := txinbox.NewProcessor(driver, *inbox)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: Config.Inbox: %w", pkg, err)
	}
	return proc, excused, nil
}

// Once lets Run start once; its zero value is ready.
type Once struct{ running atomic.Bool }

// Start returns nil the first time, then the error
// "<pkg>: Consumer.Run called twice".
func (o *Once) Start(pkg string) error {
	if !o.running.CompareAndSwap(false, true) {
		return errors.New(pkg + ": Consumer.Run called twice")
	}
	return nil
}

// Reconnect runs session until ctx is done. Each time a session ends
// while ctx is not done, it calls broken with the count of consecutive
// sessions that ended without processing a batch (a session that
// processed one counts 1) and the session's error, then waits
// backoff(that count) or until ctx is done.
func Reconnect(ctx context.Context, backoff txinbox.BackoffFunc, session func(context.Context) (consumed bool, err error), broken func(failures int, err error)) {
	failures := 0
	for ctx.Err() == nil {
		consumed, err := session(ctx)
		if ctx.Err() != nil {
			return
		}
		if consumed {
			failures = 0
		}
		failures++
		broken(failures, err)
		if Wait(ctx, backoff(failures)) != nil {
			return
		}
	}
}

// Wait waits d, or until ctx is done, and then returns ctx.Err().
func Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
