package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/cli/bench/benchsys"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// purgePoint is one purge mode measured by bench --only purge: processing
// alone, processing while the purger removes the expired rows, processing
// alone again.
type purgePoint struct {
	Mode           string  `json:"mode"` // "rows" (batched deletes) or "partitions" (drops)
	ExpiredRows    int64   `json:"expired_rows"`
	PrefillSeconds float64 `json:"prefill_seconds"`
	// BaselineMsgsPerS is the mean of the slices before and after the purge.
	BaselineMsgsPerS float64 `json:"baseline_msgs_per_s"`
	DuringMsgsPerS   float64 `json:"during_purge_msgs_per_s"`
	DuringVsBaseline float64 `json:"during_vs_baseline"`
	PurgedRows       int64   `json:"purged_rows"`
	PurgeSeconds     float64 `json:"purge_seconds"`
	PurgeRowsPerS    float64 `json:"purge_rows_per_s"`
	PurgeBatches     int     `json:"purge_batches"`
	// Steady is the same purge (of a fresh prefill) under a steady
	// offered load of half the baseline, as a service runs between
	// peaks, rather than under saturation.
	Steady *steadyPurge `json:"steady,omitempty"`
}

// steadyPurge is a purge under a steady offered load.
type steadyPurge struct {
	OfferedMsgsPerS  float64 `json:"offered_msgs_per_s"`
	AchievedMsgsPerS float64 `json:"achieved_msgs_per_s"` // while purging
	AchievedVsOffer  float64 `json:"achieved_vs_offered"`
	PurgeSeconds     float64 `json:"purge_seconds"`
	PurgeRowsPerS    float64 `json:"purge_rows_per_s"`
}

// purgeRetention is the bench's retention; the prefilled rows are 40 days
// old, and the partition holding them ended 35 days ago.
const purgeRetention = 30 * 24 * time.Hour

// runPurgeBench runs the purge scenario in a bench schema of its own.
func runPurgeBench(ctx context.Context, env *clikit.Env, o benchOptions) ([]purgePoint, error) {
	be, err := newBenchEnv(ctx, env, o)
	if err != nil {
		return nil, err
	}
	defer be.close()
	defer be.progress("")
	return be.purgeBench(ctx)
}

// purgeBench measures both purge modes on inboxes of their own (table
// prefixes) in the bench schema.
func (be *benchEnv) purgeBench(ctx context.Context) ([]purgePoint, error) {
	var out []purgePoint
	for _, partitioned := range []bool{false, true} {
		mode, prefix := "rows", "txinbox_purge_rows_"
		if partitioned {
			mode, prefix = "partitions", "txinbox_purge_part_"
		}
		d, err := pgstore.New(be.pool, pgstore.Options{Schema: be.schema, TablePrefix: prefix, Partitioned: partitioned})
		if err != nil {
			return nil, err
		}
		if err := d.Migrate(ctx); err != nil {
			return nil, err
		}
		p, err := be.purgeOne(ctx, d, mode, partitioned)
		if err != nil {
			return nil, fmt.Errorf("purge bench (%s): %w", mode, err)
		}
		out = append(out, *p)
		// Free the space for the next mode.
		if _, err := be.pool.Exec(ctx, d.Tables().Expand(`DROP TABLE {inbox}`)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (be *benchEnv) purgeOne(ctx context.Context, d *pgstore.Driver, mode string, partitioned bool) (*purgePoint, error) {
	p, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{
		Scope: "bench", MaxBatchSize: be.o.batch, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
			return benchEffectsHandler(ctx, tx, messageIDs(msgs))
		},
	})
	if err != nil {
		return nil, err
	}
	return be.purgeRun(ctx, purgeTarget{
		mode:    mode,
		purger:  d,
		process: p.Process,
		prefill: func(ctx context.Context) error { return be.prefillExpired(ctx, d, partitioned) },
		clear: func(ctx context.Context) error {
			_, err := be.pool.Exec(ctx, "TRUNCATE effects")
			return err
		},
		counts: func(ctx context.Context) (left, effects, inbox int64, err error) {
			err = be.pool.QueryRow(ctx, d.Tables().Expand(`SELECT (SELECT count(*) FROM {inbox} WHERE scope = 'prefill'),
		(SELECT count(*) FROM effects), (SELECT count(*) FROM {inbox} WHERE scope = 'bench')`)).Scan(&left, &effects, &inbox)
			return left, effects, inbox, err
		},
	})
}

// purgeTarget is one store's purge scenario: what purgeRun measures.
type purgeTarget struct {
	mode    string
	purger  store.Purger
	process func(context.Context, []*txinbox.Message) ([]txinbox.Result, error)
	// prefill adds be.o.purgeRows rows of scope "prefill", expired under
	// purgeRetention; clear empties the effects table.
	prefill, clear func(context.Context) error
	// counts reads the prefill rows left, the effects and the bench
	// scope's inbox rows.
	counts func(context.Context) (left, effects, inbox int64, err error)
}

// purgeRun prefills the expired rows, then measures processing alone,
// processing while the purger removes them, and processing alone again;
// then the same purge under a steady load of half the baseline.
func (be *benchEnv) purgeRun(ctx context.Context, t purgeTarget) (*purgePoint, error) {
	pt := &purgePoint{Mode: t.mode, ExpiredRows: be.o.purgeRows}
	start := time.Now()
	if err := t.prefill(ctx); err != nil {
		return nil, err
	}
	pt.PrefillSeconds = time.Since(start).Seconds()
	if err := t.clear(ctx); err != nil {
		return nil, err
	}
	be.progress("purge (%s): processing alone...", t.mode)
	before, err := be.processWhile(ctx, t.process, func(ctx context.Context) error { return benchsys.SleepCtx(ctx, be.o.duration) })
	if err != nil {
		return nil, err
	}
	be.progress("purge (%s): processing while purging %d rows...", t.mode, be.o.purgeRows)
	pg, err := purge.New(t.purger, purge.Config{Retention: purgeRetention,
		OnBatch: func(r store.PurgeResult, _ time.Duration) { pt.PurgeBatches++ }})
	if err != nil {
		return nil, err
	}
	during, err := be.processWhile(ctx, t.process, func(ctx context.Context) error {
		t0 := time.Now()
		res, err := pg.Round(ctx)
		pt.PurgeSeconds, pt.PurgedRows = time.Since(t0).Seconds(), res.Inbox
		return err
	})
	if err != nil {
		return nil, err
	}
	be.progress("purge (%s): processing alone again...", t.mode)
	after, err := be.processWhile(ctx, t.process, func(ctx context.Context) error { return benchsys.SleepCtx(ctx, be.o.duration) })
	if err != nil {
		return nil, err
	}
	pt.BaselineMsgsPerS = (before + after) / 2
	pt.DuringMsgsPerS = during
	pt.DuringVsBaseline = during / pt.BaselineMsgsPerS
	// Every expired row is gone, and processing stayed exactly once: one
	// effect per processed inbox row.
	left, effects, inbox, err := t.counts(ctx)
	if err != nil {
		return nil, err
	}
	if left != 0 {
		return nil, fmt.Errorf("%d of the %d expired rows are left after the purge", left, be.o.purgeRows)
	}
	if effects != inbox {
		return nil, fmt.Errorf("%d effects for %d inbox rows", effects, inbox)
	}
	// The rate is of the rows there were (a dropped partition's count is
	// the planner's estimate).
	pt.PurgeRowsPerS = float64(be.o.purgeRows) / pt.PurgeSeconds
	if pt.Steady, err = be.purgeSteady(ctx, t, pt.BaselineMsgsPerS/2); err != nil {
		return nil, err
	}
	return pt, nil
}

// purgeSteady prefills the expired rows again and purges them while
// processing is offered rate messages/s.
func (be *benchEnv) purgeSteady(ctx context.Context, t purgeTarget, rate float64) (*steadyPurge, error) {
	be.progress("purge (%s): prefilling %d expired rows again...", t.mode, be.o.purgeRows)
	if err := t.prefill(ctx); err != nil {
		return nil, err
	}
	pg, err := purge.New(t.purger, purge.Config{Retention: purgeRetention})
	if err != nil {
		return nil, err
	}
	st := &steadyPurge{OfferedMsgsPerS: rate}
	be.progress("purge (%s): %.0f msgs/s offered while purging...", t.mode, rate)
	st.AchievedMsgsPerS, err = be.processAt(ctx, t.process, rate, func(ctx context.Context) error {
		t0 := time.Now()
		_, err := pg.Round(ctx)
		st.PurgeSeconds = time.Since(t0).Seconds()
		return err
	})
	if err != nil {
		return nil, err
	}
	st.AchievedVsOffer = st.AchievedMsgsPerS / rate
	st.PurgeRowsPerS = float64(be.o.purgeRows) / st.PurgeSeconds
	return st, nil
}

// prefillExpired adds the expired rows, received 40 days ago a millisecond
// apart, in transactions of one million, then vacuums and analyzes them as
// autovacuum would have long before they expired. In the partitioned
// layout they fill period 1, which then ends 35 days ago (the bench's stand-in
// for 35 days of waiting).
func (be *benchEnv) prefillExpired(ctx context.Context, d *pgstore.Driver, partitioned bool) error {
	cols, vals := "", ""
	var period int64
	if partitioned {
		// The current period: filled, then ended 35 days ago.
		ps, err := d.Periods(ctx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.EndedAt.IsZero() {
				period = p.Period
			}
		}
		cols, vals = ", period", fmt.Sprintf(", %d", period)
	}
	q := d.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, source, payload_hash, received_at, processed_at` + cols + `)
SELECT 'prefill', 'InvoiceIssued/' || g, 'bench', $3, t, t` + vals + `
FROM generate_series($1::bigint, $2::bigint) g, LATERAL (SELECT now() - interval '40 days' + g * interval '1 ms' AS t) x`)
	n := be.o.purgeRows
	for lo := int64(1); lo <= n; lo += 1_000_000 {
		hi := min(lo+999_999, n)
		be.progress("purge: filling %d/%d expired rows...", hi, n)
		if _, err := be.pool.Exec(ctx, q, lo, hi, benchHash()); err != nil {
			return fmt.Errorf("filling the inbox: %w", err)
		}
	}
	if partitioned {
		if _, _, err := d.RotatePeriod(ctx, true); err != nil {
			return err
		}
		if _, err := be.pool.Exec(ctx, `UPDATE `+d.Tables().Prefix+`inbox_periods SET ended_at = now() - interval '35 days' WHERE period = $1`, period); err != nil {
			return err
		}
	}
	be.progress("purge: vacuuming the %d rows...", n)
	_, err := be.pool.Exec(ctx, d.Tables().Expand(`VACUUM (ANALYZE) {inbox}`))
	return err
}

// processWhile runs the processing load on be.o.conns workers, each feeding
// batches of new ids, until during returns; it returns messages/s.
func (be *benchEnv) processWhile(ctx context.Context, process func(context.Context, []*txinbox.Message) ([]txinbox.Result, error),
	during func(context.Context) error) (float64, error) {
	return be.processAt(ctx, process, 0, during)
}

// processAt is processWhile offering at most rate messages/s (0: as many
// as the workers manage): batch j is not sent before j*batch/rate seconds
// from the start; a worker behind that schedule sends at once.
func (be *benchEnv) processAt(ctx context.Context, process func(context.Context, []*txinbox.Message) ([]txinbox.Result, error),
	rate float64, during func(context.Context) error) (float64, error) {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ids := benchsys.NewIDSource(0, 0)
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, be.o.conns)
	start := time.Now()
	var issued atomic.Int64
	for range be.o.conns {
		wg.Go(func() {
			for wctx.Err() == nil {
				if rate > 0 {
					j := issued.Add(1) - 1
					due := start.Add(time.Duration(float64(j) * float64(be.o.batch) / rate * float64(time.Second)))
					if benchsys.SleepCtx(wctx, time.Until(due)) != nil {
						return
					}
				}
				msgs := make([]*txinbox.Message, be.o.batch)
				for i := range msgs {
					id, _ := ids.ID(nil)
					msgs[i] = &txinbox.Message{ID: id, Source: "bench", Payload: benchPayload}
				}
				// A batch runs to its end past the stop, so it is counted.
				if _, err := process(context.WithoutCancel(wctx), msgs); err != nil {
					errs <- err
					stop()
					return
				}
				n.Add(int64(len(msgs)))
			}
		})
	}
	err := during(wctx)
	stop()
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	close(errs)
	if werr := <-errs; werr != nil {
		return 0, fmt.Errorf("processing: %w", werr)
	}
	if err != nil {
		return 0, err
	}
	return float64(n.Load()) / elapsed, nil
}

func printPurgeBench(w io.Writer, points []purgePoint) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\npurge mode\texpired rows\tmsgs/s alone\tmsgs/s purging\tpurging/alone\tpurge s\tpurged rows/s\tbatches\t")
	for _, p := range points {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f%%\t%.1f\t%.0f\t%d\t\n", p.Mode, p.ExpiredRows, p.BaselineMsgsPerS,
			p.DuringMsgsPerS, 100*p.DuringVsBaseline, p.PurgeSeconds, p.PurgeRowsPerS, p.PurgeBatches)
	}
	tw.Flush()
	fmt.Fprintln(w, "targets: purging/alone >= 80%, purged rows/s >= 100,000")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\nsteady load\tmsgs/s offered\tmsgs/s achieved purging\tachieved/offered\tpurge s\tpurged rows/s\t")
	for _, p := range points {
		if s := p.Steady; s != nil {
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f%%\t%.1f\t%.0f\t\n", p.Mode, s.OfferedMsgsPerS, s.AchievedMsgsPerS,
				100*s.AchievedVsOffer, s.PurgeSeconds, s.PurgeRowsPerS)
		}
	}
	tw.Flush()
}
