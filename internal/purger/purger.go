// Package purger removes expired inbox rows in bounded batches, each in a
// short transaction of its own, one purger at a time across processes, with
// a batch size that adapts to how long batches take.
package purger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/txinbox/txinbox/store"
)

// Config configures a Purger.
type Config struct {
	// Retention is how long inbox rows are kept. Required.
	Retention time.Duration
	// Scope limits the purge to one scope. Defaults to every scope.
	Scope string
	// Scopes give scopes a retention of their own. A round purges each of
	// them with its retention first, then every scope (and what the store
	// purges besides the inbox, and a partitioned inbox's partitions) with
	// the longest of Retention and theirs, so that no scope loses a row
	// before its own retention. List every scope the service runs when
	// their retentions differ: a scope not listed keeps its rows for that
	// longest retention. Not with Scope.
	Scopes []ScopeRetention
	// Interval is the pause between purge rounds. Defaults to 1 minute.
	Interval time.Duration
	// BatchSize is the first batch size. Defaults to 5,000.
	BatchSize int
	// MinBatch and MaxBatch bound the adaptive batch size. Default to 500
	// and 50,000.
	MinBatch, MaxBatch int
	// TargetBatchTime is how long one batch should take: slower batches
	// halve the size, much faster ones double it. Defaults to 250ms.
	TargetBatchTime time.Duration
	// Pause is the breather between batches of one round, left to the hot
	// path. Defaults to 10ms.
	Pause time.Duration
	// OnBatch, if set, is called after every batch (metrics, progress).
	OnBatch func(store.PurgeResult, time.Duration)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.BatchSize, 5000)
	def(&c.MinBatch, 500)
	def(&c.MaxBatch, 50000)
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.TargetBatchTime == 0 {
		c.TargetBatchTime = 250 * time.Millisecond
	}
	if c.Pause == 0 {
		c.Pause = 10 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Retention <= 0:
		return errors.New("purger: Config.Retention must be positive")
	case c.Scope != "" && len(c.Scopes) > 0:
		return errors.New("purger: Config.Scope and Config.Scopes exclude each other")
	case c.MinBatch < 1 || c.MaxBatch < c.MinBatch || c.BatchSize < c.MinBatch || c.BatchSize > c.MaxBatch:
		return errors.New("purger: Config.BatchSize must lie within Config.MinBatch..MaxBatch, MinBatch at least 1")
	}
	for i, sr := range c.Scopes {
		if sr.Scope == "" || sr.Retention <= 0 {
			return fmt.Errorf("purger: Config.Scopes[%d] needs a scope and a positive retention", i)
		}
	}
	return nil
}

// ScopeRetention is one scope's own retention.
type ScopeRetention struct {
	Scope     string
	Retention time.Duration
}

// Purger purges one store.
type Purger struct {
	p     store.Purger
	cfg   Config
	batch int
}

// New returns a Purger for p.
func New(p store.Purger, cfg Config) (*Purger, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Purger{p: p, cfg: cfg, batch: cfg.BatchSize}, nil
}

// Run purges every Interval until ctx is done.
func (pg *Purger) Run(ctx context.Context) error {
	for {
		if _, err := pg.Round(ctx); err != nil && ctx.Err() == nil {
			pg.cfg.Logger.ErrorContext(ctx, "txinbox: purge round failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pg.cfg.Interval):
		}
	}
}

// Round takes the purge lock and deletes expired rows batch by batch until
// none is left. It does nothing when another process holds the lock.
func (pg *Purger) Round(ctx context.Context) (total store.PurgeResult, err error) {
	release, ok, err := pg.p.PurgeLock(ctx)
	if err != nil || !ok {
		return total, err
	}
	defer release()
	now, longest := pg.cfg.Now(), pg.cfg.Retention
	for _, sr := range pg.cfg.Scopes {
		longest = max(longest, sr.Retention)
		if err := pg.pass(ctx, sr.Scope, now.Add(-sr.Retention), &total); err != nil {
			return total, err
		}
	}
	return total, pg.pass(ctx, pg.cfg.Scope, now.Add(-longest), &total)
}

// pass deletes the rows of scope ("" for all) received before before,
// batch by batch until none is left, adding them to total.
func (pg *Purger) pass(ctx context.Context, scope string, before time.Time, total *store.PurgeResult) error {
	for {
		start, limit := time.Now(), int64(pg.batch)
		res, err := pg.p.PurgeBatch(ctx, store.PurgeRequest{Scope: scope, Before: before, Limit: pg.batch})
		if err != nil {
			return err
		}
		took := time.Since(start)
		total.Inbox, total.Attempts, total.Drift = total.Inbox+res.Inbox, total.Attempts+res.Attempts, total.Drift+res.Drift
		total.Other += res.Other
		if pg.cfg.OnBatch != nil {
			pg.cfg.OnBatch(res, took)
		}
		pg.adapt(took)
		if res.Inbox < limit && res.Attempts < limit && res.Drift < limit && res.Other < limit {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pg.cfg.Pause):
		}
	}
}

// adapt halves the batch after a slow batch and doubles it after a fast one.
func (pg *Purger) adapt(took time.Duration) {
	switch {
	case took > pg.cfg.TargetBatchTime:
		pg.batch = max(pg.cfg.MinBatch, pg.batch/2)
	case took < pg.cfg.TargetBatchTime/4:
		pg.batch = min(pg.cfg.MaxBatch, pg.batch*2)
	}
}

// BatchSize returns the current adaptive batch size.
func (pg *Purger) BatchSize() int { return pg.batch }
