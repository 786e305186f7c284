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
	"github.com/txinbox/txinbox/purge"
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
	now := time.Now()
	before := now.Add(-retention)
	start := time.Now()
	// On a partitioned inbox, whole partitions go (all-scope purges only).
	var partitions []int64
	if db.pg != nil && *scope == "" {
		if partitions, err = expiredPeriods(ctx, db.pg, before); err != nil {
			fmt.Fprintf(env.Stderr, "txinbox purge: %s: %v\n", db.where, err)
			return ExitFailure
		}
	}
	res, err := purgeOnce(ctx, env, db, dbf, purge.Config{Retention: retention, Scope: *scope, BatchSize: *batch,
		MinBatch: min(*batch, 500), MaxBatch: max(*batch, 50000), Now: func() time.Time { return now }}, *dry)
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox purge: %s: %v\n", db.where, err)
		return ExitFailure
	}
	as4n, outboxn := res.Tables["as4_messages"], res.Tables["outbox_sent"]
	out := map[string]any{"dry_run": *dry, "before": before.UTC(), "inbox": res.Inbox, "attempts": res.Attempts,
		"drift": res.Drift, "as4_messages": as4n, "outbox_sent": outboxn, "partitions": partitions,
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
	if as4n > 0 || outboxn > 0 {
		fmt.Fprintf(env.Stdout, "%s %d AS4 messages and %d sent outbox rows of the same age\n", verb, as4n, outboxn)
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

// purgeOnce runs one purge round (or, dry, counts it) of the inbox, and of
// the AS4 messages (when serve created their tables) and the sent outbox
// rows as old; progress on a terminal.
func purgeOnce(ctx context.Context, env *Env, db *inboxDB, dbf dbFlags, cfg purge.Config, dry bool) (purge.Result, error) {
	var err error
	if cfg.Tables, err = purgeTables(ctx, db, dbf); err != nil {
		return purge.Result{}, err
	}
	var done int64
	progress := func(n int64) {
		done += n
		if env.IsTerminal {
			fmt.Fprintf(env.Stderr, "\r\033[Kpurge: %d rows deleted", done)
		}
	}
	cfg.OnBatch = func(r store.PurgeResult, _ time.Duration) { progress(r.Total()) }
	cfg.OnTableBatch = func(_ string, n int64, _ time.Duration) { progress(n) }
	p, err := purge.New(db.admin.(store.Purger), cfg)
	if err != nil {
		return purge.Result{}, err
	}
	if dry {
		return p.DryRun(ctx)
	}
	res, err := p.Round(ctx)
	if env.IsTerminal {
		fmt.Fprint(env.Stderr, "\r\033[K")
	}
	return res, err
}

// purgeTables are the tables purged with the inbox: the AS4 messages, when
// serve created their tables, and the sent outbox rows.
func purgeTables(ctx context.Context, db *inboxDB, dbf dbFlags) ([]purge.Table, error) {
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
		return nil, err
	}
	ok, err := as4.Exists(ctx)
	if err != nil {
		return nil, fmt.Errorf("AS4 tables: %w", err)
	}
	ob := db.outboxStore()
	tables := []purge.Table{{Name: "outbox_sent", Purge: ob.PurgeSent, Count: ob.SentBefore}}
	if ok {
		tables = append([]purge.Table{{Name: "as4_messages", Purge: as4.Purge, Count: as4.Expired}}, tables...)
	}
	return tables, nil
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
