// Package purge removes expired inbox rows: in bounded batches, each in a
// short transaction of its own, one purger at a time across the processes
// sharing the database, with a batch size that adapts to how long batches
// take. It is what txinbox serve runs in the background and txinbox purge
// runs once, for Go programs that run the inbox themselves:
//
//	p, err := purge.New(driver, purge.Config{Retention: 30 * 24 * time.Hour})
//	if err != nil { ... }
//	go p.Run(ctx) // a round every minute until ctx is done
//
// The retention must cover how long a source can deliver a message again
// (package server checks it against the brokers at start): a copy that
// comes back after its row was purged is processed again.
//
// Tables outside the inbox whose rows expire with the inbox rows (the AS4
// messages, the sent outbox rows) are given as Config.Tables.
package purge

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
	// Scope limits the purge to one scope. Defaults to every scope. A
	// purge of one scope leaves Tables alone: they have no scope.
	Scope string
	// Scopes give scopes a retention of their own. A round purges each of
	// them with its retention first, then every scope (and Tables, and
	// what the store purges besides the inbox, and a partitioned inbox's
	// partitions) with the longest of Retention and theirs, so that no
	// scope loses a row before its own retention. List every scope the
	// service runs when their retentions differ: a scope not listed keeps
	// its rows for that longest retention. Not with Scope.
	Scopes []ScopeRetention
	// Tables are tables outside the inbox purged after the inbox, with the
	// same cutoff and batch size. Defaults to none.
	Tables []Table
	// Interval is the pause between purge rounds of Run. Defaults to 1
	// minute.
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
	// OnBatch, if set, is called after every batch of the inbox tables
	// (prom.Metrics.OnPurgeBatch, progress). Defaults to none.
	OnBatch func(store.PurgeResult, time.Duration)
	// OnTableBatch, if set, is called after every batch of one of Tables
	// with its name (prom.Metrics.OnPurgeTable). Defaults to none.
	OnTableBatch func(table string, rows int64, took time.Duration)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// ScopeRetention is one scope's own retention.
type ScopeRetention struct {
	// Scope is the inbox scope.
	Scope string
	// Retention is how long the scope's rows are kept.
	Retention time.Duration
}

// Table is a table outside the inbox whose rows expire with the inbox rows.
type Table struct {
	// Name names the table in results, logs and metrics, e.g.
	// "as4_messages". Required.
	Name string
	// Purge deletes at most limit rows older than before in a short
	// transaction of its own and returns how many it deleted. Required.
	Purge func(ctx context.Context, before time.Time, limit int) (int64, error)
	// Count counts the rows older than before, for DryRun. Defaults to
	// none: a dry run does not count the table.
	Count func(ctx context.Context, before time.Time) (int64, error)
}

// Result counts the rows a round removed (or a dry run would remove).
type Result struct {
	store.PurgeResult
	// Tables counts the rows of Config.Tables by name.
	Tables map[string]int64
}

// Total is the sum of the counts.
func (r Result) Total() int64 {
	n := r.PurgeResult.Total()
	for _, k := range r.Tables {
		n += k
	}
	return n
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
	defDuration(&c.Interval, time.Minute)
	defDuration(&c.TargetBatchTime, 250*time.Millisecond)
	defDuration(&c.Pause, 10*time.Millisecond)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func defDuration(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func (c Config) validate() error {
	switch {
	case c.Retention <= 0:
		return errors.New("purge: Config.Retention must be positive")
	case c.Scope != "" && len(c.Scopes) > 0:
		return errors.New("purge: Config.Scope and Config.Scopes exclude each other")
	case c.MinBatch < 1 || c.MaxBatch < c.MinBatch || c.BatchSize < c.MinBatch || c.BatchSize > c.MaxBatch:
		return errors.New("purge: Config.BatchSize must lie within Config.MinBatch..MaxBatch, MinBatch at least 1")
	}
	for i, sr := range c.Scopes {
		if sr.Scope == "" || sr.Retention <= 0 {
			return fmt.Errorf("purge: Config.Scopes[%d] needs a scope and a positive retention", i)
		}
	}
	for i, t := range c.Tables {
		if t.Name == "" || t.Purge == nil {
			return fmt.Errorf("purge: Config.Tables[%d] needs a Name and a Purge func", i)
		}
	}
	return nil
}

// Purger purges one store.
type Purger struct {
	p     store.Purger
	cfg   Config
	batch int
}

// New returns a Purger of p, the inbox's driver (*pgstore.Driver and
// *sqlitestore.Driver are store.Purgers).
func New(p store.Purger, cfg Config) (*Purger, error) {
	if p == nil {
		return nil, errors.New("purge: the store is nil")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Purger{p: p, cfg: cfg, batch: cfg.BatchSize}, nil
}

// Config returns the purger's configuration, defaults filled in.
func (pg *Purger) Config() Config { return pg.cfg }

// Run purges a round every Interval until ctx is done; a failed round is
// logged and the next one tried. It returns ctx's error.
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
func (pg *Purger) Round(ctx context.Context) (total Result, err error) {
	release, ok, err := pg.p.PurgeLock(ctx)
	if err != nil || !ok {
		return total, err
	}
	defer release()
	now, longest := pg.cfg.Now(), pg.cfg.Retention
	for _, sr := range pg.cfg.Scopes {
		longest = max(longest, sr.Retention)
		if err := pg.pass(ctx, sr.Scope, now.Add(-sr.Retention), &total.PurgeResult); err != nil {
			return total, err
		}
	}
	before := now.Add(-longest)
	if err := pg.pass(ctx, pg.cfg.Scope, before, &total.PurgeResult); err != nil || pg.cfg.Scope != "" {
		return total, err
	}
	total.Tables, err = pg.purgeTables(ctx, before)
	return total, err
}

// DryRun counts what a round would delete now, deleting nothing: the
// inbox rows (of Scope, with Retention) and the rows of the Tables that
// can count theirs.
func (pg *Purger) DryRun(ctx context.Context) (Result, error) {
	before := pg.cfg.Now().Add(-pg.cfg.Retention)
	res, err := pg.p.PurgeBatch(ctx, store.PurgeRequest{Scope: pg.cfg.Scope, Before: before, DryRun: true})
	out := Result{PurgeResult: res}
	if err != nil || pg.cfg.Scope != "" {
		return out, err
	}
	out.Tables = map[string]int64{}
	for _, t := range pg.cfg.Tables {
		if t.Count == nil {
			continue
		}
		if out.Tables[t.Name], err = t.Count(ctx, before); err != nil {
			return out, fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	return out, nil
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
		if pg.cfg.OnBatch != nil {
			pg.cfg.OnBatch(res, took)
		}
		pg.adapt(took)
		if res.Inbox < limit && res.Attempts < limit && res.Drift < limit {
			return nil
		}
		if err := pg.pause(ctx); err != nil {
			return err
		}
	}
}

// purgeTables deletes the rows of each of Tables older than before, batch
// by batch until none is left.
func (pg *Purger) purgeTables(ctx context.Context, before time.Time) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range pg.cfg.Tables {
		for {
			start, limit := time.Now(), pg.batch
			n, err := t.Purge(ctx, before, limit)
			out[t.Name] += n
			if err != nil {
				return out, fmt.Errorf("%s: %w", t.Name, err)
			}
			took := time.Since(start)
			if pg.cfg.OnTableBatch != nil {
				pg.cfg.OnTableBatch(t.Name, n, took)
			}
			pg.adapt(took)
			if n < int64(limit) {
				break
			}
			if err := pg.pause(ctx); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

func (pg *Purger) pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pg.cfg.Pause):
		return nil
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
