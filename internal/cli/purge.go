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

	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/internal/purger"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

func init() {
	register("purge", "delete inbox rows (and AS4 messages, sent outbox rows) older than the retention, in bounded batches", runPurge)
}

func runPurge(ctx context.Context, env *Env, args []string) int {
	fs := flag.NewFlagSet("purge", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var dbf dbFlags
	dbf.register(fs, env)
	olderThan := fs.String("older-than", "30d", "retention: delete rows received longer ago than this (e.g. 30d, 720h)")
	scope := fs.String("scope", "", "only this scope (default: all)")
	dry := fs.Bool("dry-run", false, "count what would be deleted, delete nothing")
	batch := new(int)
	intFlag(fs, batch, "batch", 5000, 1, "rows per batch transaction (adapts between 500 and 50,000)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	retention, err := parseRetention(*olderThan)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox purge: --older-than:", err)
		return ExitUsage
	}
	db, err := openMigrated(ctx, dbf, 2)
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
	var others purgedOthers
	if err == nil && *scope == "" {
		// The AS4 messages and the sent outbox rows go with the inbox
		// rows (all-scope purges only: they have no scope of their own).
		others, err = purgeOthers(ctx, db, dbf, before, *dry, *batch)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox purge: %s: %v\n", db.where, err)
		return ExitFailure
	}
	out := map[string]any{"dry_run": *dry, "before": before.UTC(), "inbox": res.Inbox, "attempts": res.Attempts,
		"drift": res.Drift, "as4_messages": others.as4, "outbox_sent": others.outbox, "partitions": partitions,
		"seconds": time.Since(start).Seconds()}
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
	if others.as4 > 0 || others.outbox > 0 {
		fmt.Fprintf(env.Stdout, "%s %d AS4 messages and %d sent outbox rows of the same age\n", verb, others.as4, others.outbox)
	}
	if len(partitions) > 0 {
		verb = "dropped"
		if *dry {
			verb = "would drop"
		}
		fmt.Fprintf(env.Stdout, "%s the partitions of periods %v (their rows are counted above)\n", verb, partitions)
	}
	return ExitOK
}

// purgedOthers counts what a purge deleted (or would) besides the inbox.
type purgedOthers struct{ as4, outbox int64 }

// purgeOthers deletes, in bounded batches, the AS4 messages (when serve
// created their tables) and the sent outbox rows older than before; a dry
// run counts them.
func purgeOthers(ctx context.Context, db *inboxDB, dbf dbFlags, before time.Time, dry bool, batch int) (purgedOthers, error) {
	var out purgedOthers
	type as4Purger interface {
		Exists(context.Context) (bool, error)
		Expired(context.Context, time.Time) (int64, error)
		Purge(context.Context, time.Time, int) (int64, error)
	}
	var as4 as4Purger
	var err error
	if db.pg != nil {
		as4, err = as4pg.New(db.pg.Pool(), as4pg.Options{Schema: dbf.schema, TablePrefix: dbf.prefix})
	} else {
		as4, err = as4sqlite.New(db.lite.DB(), as4sqlite.Options{TablePrefix: dbf.prefix})
	}
	if err != nil {
		return out, err
	}
	ob := db.outboxStore()
	ok, err := as4.Exists(ctx)
	if err != nil {
		return out, fmt.Errorf("AS4 tables: %w", err)
	}
	if dry {
		if ok {
			if out.as4, err = as4.Expired(ctx, before); err != nil {
				return out, fmt.Errorf("AS4 messages: %w", err)
			}
		}
		out.outbox, err = ob.SentBefore(ctx, before)
		return out, err
	}
	drain := func(what string, n *int64, purge func(context.Context, time.Time, int) (int64, error)) error {
		for {
			k, err := purge(ctx, before, batch)
			*n += k
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			if k < int64(batch) {
				return nil
			}
		}
	}
	if ok {
		if err := drain("AS4 messages", &out.as4, as4.Purge); err != nil {
			return out, err
		}
	}
	return out, drain("sent outbox rows", &out.outbox, ob.PurgeSent)
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
