package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/txinbox/txinbox/internal/purger"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

func init() {
	register("purge", "delete inbox rows older than the retention, in bounded batches", runPurge)
}

func runPurge(ctx context.Context, env *Env, args []string) int {
	fs := flag.NewFlagSet("purge", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var dbf dbFlags
	dbf.register(fs, env)
	olderThan := fs.String("older-than", "30d", "retention: delete rows received longer ago than this (e.g. 30d, 720h)")
	scope := fs.String("scope", "", "only this scope (default: all)")
	dry := fs.Bool("dry-run", false, "count what would be deleted, delete nothing")
	batch := fs.Int("batch", 5000, "rows per batch transaction (adapts between 500 and 50,000)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	retention, err := parseRetention(*olderThan)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox purge: --older-than:", err)
		return ExitUsage
	}
	db, err := openDB(ctx, dbf, 2)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox purge:", err)
		return ExitUsage
	}
	defer db.close()
	pu := db.admin.(store.Purger)
	before := time.Now().Add(-retention)
	start := time.Now()
	var res store.PurgeResult
	// On a partitioned inbox, whole partitions go (all-scope purges only).
	var partitions []int64
	if db.pg != nil && *scope == "" {
		if partitions, err = expiredPeriods(ctx, db.pg, before); err != nil {
			fmt.Fprintf(env.Stderr, "txinbox purge: %s: %v\n", db.where, err)
			return ExitFailure
		}
	}
	if *dry {
		res, err = pu.PurgeBatch(ctx, store.PurgeRequest{Scope: *scope, Before: before, DryRun: true})
	} else {
		res, err = purgeNow(ctx, env, pu, *scope, retention, *batch)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox purge: %s: %v\n", db.where, err)
		return ExitFailure
	}
	out := map[string]any{"dry_run": *dry, "before": before.UTC(), "inbox": res.Inbox, "attempts": res.Attempts,
		"drift": res.Drift, "partitions": partitions, "seconds": time.Since(start).Seconds()}
	if *asJSON {
		json.NewEncoder(env.Stdout).Encode(out) //nolint:errcheck // stdout
		return ExitOK
	}
	verb := "purged"
	if *dry {
		verb = "would purge"
	}
	fmt.Fprintf(env.Stdout, "%s %d inbox rows, %d attempt rows, %d drift records older than %s (before %s) in %.1fs\n",
		verb, res.Inbox, res.Attempts, res.Drift, *olderThan, before.UTC().Format(time.RFC3339), time.Since(start).Seconds())
	if len(partitions) > 0 {
		verb = "dropped"
		if *dry {
			verb = "would drop"
		}
		fmt.Fprintf(env.Stdout, "%s the partitions of periods %v (their rows are counted above)\n", verb, partitions)
	}
	return ExitOK
}

// expiredPeriods lists the periods whose partitions a purge with this
// cut-off drops; none for an unpartitioned inbox.
func expiredPeriods(ctx context.Context, d *pgstore.Driver, before time.Time) ([]int64, error) {
	ps, err := d.Periods(ctx)
	if errors.Is(err, pgstore.ErrNotPartitioned) {
		return nil, nil
	}
	var out []int64
	for _, p := range ps {
		if !p.EndedAt.IsZero() && p.EndedAt.Before(before) && p.DroppedAt.IsZero() {
			out = append(out, p.Period)
		}
	}
	return out, err
}

func purgeNow(ctx context.Context, env *Env, pu store.Purger, scope string, retention time.Duration, batch int) (store.PurgeResult, error) {
	var done int64
	p, err := purger.New(pu, purger.Config{Retention: retention, Scope: scope, BatchSize: batch,
		MinBatch: min(batch, 500), MaxBatch: max(batch, 50000),
		OnBatch: func(r store.PurgeResult, _ time.Duration) {
			done += r.Total()
			if env.IsTerminal {
				fmt.Fprintf(env.Stderr, "\r\033[Kpurge: %d rows deleted", done)
			}
		}})
	if err != nil {
		return store.PurgeResult{}, err
	}
	res, err := p.Round(ctx)
	if env.IsTerminal {
		fmt.Fprint(env.Stderr, "\r\033[K")
	}
	return res, err
}

// parseRetention accepts Go durations and a number of days ("30d").
func parseRetention(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n float64
		n, err = strconv.ParseFloat(days, 64)
		d = time.Duration(n * float64(24*time.Hour))
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (e.g. 30d, 720h)", s)
	}
	return d, nil
}
