package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/internal/cli/bench/benchsys"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// txinboxPG feeds the processor from memory: each worker processes batches
// whose effects a batch handler writes with one statement.
func (be *benchEnv) txinboxPG(ctx context.Context, dup float64) (*benchResult, error) {
	p, err := txinbox.NewProcessor(be.driver, txinbox.Config[pgx.Tx]{
		Scope:        "bench",
		MaxBatchSize: be.o.batch,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			return benchEffectsHandler(ctx, tx, messageIDs(msgs))
		},
	})
	if err != nil {
		return nil, err
	}
	return be.feedProcessor(ctx, "postgres", dup, be.o.conns, p.Process)
}

func (be *benchEnv) txinboxSQLite(ctx context.Context, dup float64) (*benchResult, error) {
	path, cleanup, err := benchsys.TempSQLite(be.o.sqlite)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		return nil, err
	}
	if _, err := d.DB().ExecContext(ctx, "CREATE TABLE effects (scope TEXT NOT NULL, message_id TEXT NOT NULL)"); err != nil {
		return nil, err
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{
		Scope:        "bench",
		MaxBatchSize: be.o.batch,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx *sql.Tx, msgs []*txinbox.Message) error {
			stmt, err := tx.PrepareContext(ctx, "INSERT INTO effects VALUES ('bench', ?)")
			if err != nil {
				return err
			}
			defer stmt.Close()
			for _, m := range msgs {
				if _, err := stmt.ExecContext(ctx, m.ID); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return be.feedProcessor(ctx, "sqlite", dup, 1, p.Process)
}

func (be *benchEnv) feedProcessor(ctx context.Context, storeName string, dup float64, workers int,
	process func(context.Context, []*txinbox.Message) ([]txinbox.Result, error)) (*benchResult, error) {
	check := be.oneEffectPerInboxRow // PostgreSQL, on either store: the bench's tables
	switch {
	case be.check != nil:
		check = be.check
	case storeName == "sqlite":
		check = func(*benchResult) error { return nil }
	}
	return be.feedProcessorWith(ctx, storeName, dup, workers, process, check)
}

// feedProcessorWith is feedProcessor with the check of the scenario's end
// given.
func (be *benchEnv) feedProcessorWith(ctx context.Context, storeName string, dup float64, workers int,
	process func(context.Context, []*txinbox.Message) ([]txinbox.Result, error), check func(*benchResult) error) (*benchResult, error) {
	ids := benchsys.NewIDSource(dup, be.o.batch*workers*4)
	return be.measureWith(ctx, "txinbox", storeName, dup, workers, check, func(ctx context.Context, w int, lat *latencies, n *atomic.Int64) error {
		rng := rand.New(rand.NewPCG(uint64(w), 3))
		for ctx.Err() == nil {
			msgs := make([]*txinbox.Message, be.o.batch)
			for i := range msgs {
				id, _ := ids.ID(rng)
				msgs[i] = &txinbox.Message{ID: id, Source: "bench", Payload: benchPayload}
			}
			t0 := time.Now()
			// The batch runs to its end when the deadline passes, so it
			// is counted.
			if _, err := process(context.WithoutCancel(ctx), msgs); err != nil {
				return err
			}
			lat.add(time.Since(t0), len(msgs))
			n.Add(int64(len(msgs)))
		}
		return nil
	})
}

func messageIDs(msgs []*txinbox.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

// lightLoad offers rate messages/s one at a time through Submit (the
// linger batcher) and measures each message's latency from its scheduled
// arrival to its commit: what the linger costs under light load.
func (be *benchEnv) lightLoad(ctx context.Context, dup float64, rate int) (*benchResult, error) {
	p, err := txinbox.NewProcessor(be.driver, txinbox.Config[pgx.Tx]{
		Scope:        "bench",
		MaxBatchSize: be.o.batch,
		Concurrency:  be.o.conns,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			return benchEffectsHandler(ctx, tx, messageIDs(msgs))
		},
	})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	ids := benchsys.NewIDSource(dup, rate/10+10)
	r, err := be.measure(ctx, "light-load", "postgres", dup, 1, func(ctx context.Context, _ int, lat *latencies, n *atomic.Int64) error {
		rng := rand.New(rand.NewPCG(4, 4))
		interval := time.Second / time.Duration(rate)
		start := time.Now()
		errs := make(chan error, 1)
		var wg sync.WaitGroup
		defer wg.Wait()
		for i := 0; ctx.Err() == nil; i++ {
			due := start.Add(time.Duration(i) * interval)
			time.Sleep(time.Until(due)) // pacing the offered load, not waiting for a condition
			id, _ := ids.ID(rng)
			wg.Go(func() {
				if _, err := p.Submit(context.WithoutCancel(ctx), &txinbox.Message{ID: id, Source: "bench", Payload: benchPayload}); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				lat.add(time.Since(due), 1)
				n.Add(1)
			})
			select {
			case err := <-errs:
				return err
			default:
			}
		}
		return nil
	})
	if r != nil {
		r.Name = fmt.Sprintf("light-load %d/s", rate)
	}
	return r, err
}

// benchEffectSQL is the declarative scenario's effect: what a user of
// serve --effect sql writes for the bench's effect row, set-based.
const benchEffectSQL = "INSERT INTO effects (scope, message_id) SELECT scope, message_id FROM new_messages"

// declarative is the processor with the effect given as SQL, as serve
// --effect sql runs it: joined to the claim's statement, no Go handler.
func (be *benchEnv) declarative(ctx context.Context, dup float64) (*benchResult, error) {
	return declarativeOn(ctx, be, be.driver, "postgres", dup)
}

// declarativeOn is the declarative scenario on driver (pgstore's or
// pgdbstore's), its results named for storeName.
func declarativeOn[TTx any](ctx context.Context, be *benchEnv, driver store.Driver[TTx], storeName string, dup float64) (*benchResult, error) {
	eff, err := effect.New(ctx, driver, effect.Spec{Mode: effect.SQL, Statements: []string{benchEffectSQL}})
	if err != nil {
		return nil, err
	}
	cfg := eff.Apply(txinbox.Config[TTx]{Scope: "bench", MaxBatchSize: be.o.batch,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, "bench")
	p, err := txinbox.NewProcessor(driver, cfg)
	if err != nil {
		return nil, err
	}
	r, err := be.feedProcessor(ctx, storeName, dup, be.o.conns, p.Process)
	if r != nil {
		r.Name = "txinbox-declarative"
	}
	return r, err
}

// lightBusy is lightLoad with --busy CPU-bound processes running beside
// it: the light load while the machine is busy. The result's Runnable is
// how busy: the mean number of runnable tasks during the slice.
func (be *benchEnv) lightBusy(ctx context.Context, dup float64) (*benchResult, error) {
	stop, err := benchsys.StartBusy(ctx, be.o.busy)
	if err != nil {
		return nil, err
	}
	defer stop()
	sctx, cancel := context.WithCancel(ctx)
	runnable := make(chan float64, 1)
	go func() { runnable <- sampleRunnable(sctx) }()
	r, err := be.lightLoad(ctx, dup, 1000)
	cancel()
	mean := <-runnable
	if r != nil {
		r.Name = fmt.Sprintf("%s, %d busy", r.Name, be.o.busy)
		r.Runnable, r.runnableSlices = mean, 1
	}
	return r, err
}

// sampleRunnable samples the machine's runnable tasks (procs_running in
// /proc/stat, this process's threads included) every 50 ms until ctx
// ends, and returns their mean (0 where /proc/stat cannot be read).
func sampleRunnable(ctx context.Context) float64 {
	var sum, n float64
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if n == 0 {
				return 0
			}
			return sum / n
		case <-t.C:
			if v, ok := procsRunning(); ok {
				sum, n = sum+v, n+1
			}
		}
	}
}

// procsRunning reads procs_running from /proc/stat.
func procsRunning() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "procs_running "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v, true
			}
		}
	}
	return 0, false
}
