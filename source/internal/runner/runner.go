// Package runner holds the skeleton the broker sources share: the start
// of New (the processor checked, the Config's defaults filled from the
// processor's settings, the Config validated with errors naming the
// field), the defaults of the Config fields they all have, the once-only
// Run and the loop that opens a broken session again after a backoff.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
)

// Configure is the start of a source's New: it refuses a nil proc, fills
// cfg's defaults with defaults (which reads the processor's settings) and
// checks the result with validate, which records the first invalid field
// in Checks.
func Configure[C any](pkg string, proc source.Processor, cfg C, defaults func(C, txinbox.Settings) C,
	validate func(C, txinbox.Settings, *Checks)) (C, error) {
	if proc == nil {
		return cfg, errors.New(pkg + ": New: the processor is nil (build it with txinbox.NewProcessor)")
	}
	s := proc.Settings()
	cfg = defaults(cfg, s)
	v := &Checks{pkg: pkg}
	validate(cfg, s, v)
	return cfg, v.err
}

// Checks collects the first invalid field of a Config.
type Checks struct {
	pkg string
	err error
}

// Require records, unless an earlier field was invalid, that field is
// invalid for msg when ok is false. The error is a *txinbox.ConfigError
// prefixed with the package: "kafka: txinbox: invalid Config.Seeds:
// required".
func (v *Checks) Require(ok bool, field, msg string) {
	if !ok && v.err == nil {
		v.err = fmt.Errorf("%s: %w", v.pkg, &txinbox.ConfigError{Field: field, Msg: msg})
	}
}

// Common points at the Config fields the sources share, so that Defaults
// fills them in place and Check validates them.
type Common struct {
	// MaxDeliveries is nil for a source without a delivery count.
	MaxDeliveries *int
	ErrorBackoff  *txinbox.BackoffFunc
	Logger        **slog.Logger
}

// Defaults fills the shared defaults: MaxDeliveries 2 × the processor's
// MaxAttempts, ErrorBackoff backoff and Logger slog.Default().
func (c Common) Defaults(s txinbox.Settings, backoff txinbox.BackoffFunc) {
	if c.MaxDeliveries != nil && *c.MaxDeliveries == 0 {
		*c.MaxDeliveries = 2 * s.MaxAttempts
	}
	if *c.ErrorBackoff == nil {
		*c.ErrorBackoff = backoff
	}
	if *c.Logger == nil {
		*c.Logger = slog.Default()
	}
}

// Check validates the shared fields.
func (c Common) Check(v *Checks) {
	if c.MaxDeliveries != nil {
		v.Require(*c.MaxDeliveries >= 1, "MaxDeliveries", "must be at least 1")
	}
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

// Every calls f every d, from a goroutine of its own, until the returned
// stop is called; stop waits for a call in progress to return.
func Every(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
