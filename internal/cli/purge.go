package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/as4/as4my"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// purgeCommand is txinbox purge.
type purgeCommand struct {
	dbf       clikit.DBFlags
	olderThan time.Duration
	scope     string
	dry       bool
	batch     int
	json      bool
}

func (c *purgeCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "purge", Summary: "delete inbox rows (and AS4 messages, sent outbox rows) older than the retention, in bounded batches",
		Description: `Deletes the inbox rows received longer ago than --older-than, with their
attempt counts and drift records, in batches of their own short transaction
(the batch adapts between 500 and 50,000 rows). Without --scope it also
deletes the AS4 messages and the sent outbox rows of the same age, and on a
partitioned inbox drops the partitions whose period ended before the cut-off.
serve runs the same purge in the background.`,
		Examples: []clikit.Example{{Command: "txinbox purge --db postgres://localhost/billing --older-than 30d"},
			{Command: "txinbox purge --db inbox.db --older-than 1d12h --dry-run --json", What: "count what would go"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "purged (or counted, with --dry-run)"}, {Code: clikit.ExitFailure, What: "the database failed during the purge"},
			{Code: clikit.ExitUsage, What: "bad flags, or no inbox at --db"}}}
}

func (c *purgeCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.dbf.Define(fs)
	clikit.DurationFlag(fs.FlagSet, &c.olderThan, "older-than", 30*duration.Day, false, "retention: delete rows received longer ago than this (e.g. 30d, 720h)")
	fs.StringVar(&c.scope, "scope", "", "only this scope (default: all)")
	fs.BoolVar(&c.dry, "dry-run", false, "count what would be deleted, delete nothing")
	clikit.IntFlag(fs.FlagSet, &c.batch, "batch", 5000, 1, "rows per batch transaction (adapts between 500 and 50,000)")
	fs.BoolVar(&c.json, "json", false, "print the result as one JSON object")
}

func (c *purgeCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	// The flags under the names the purge below was written with.
	env, dbf, retention, scope, dry, batch, asJSON := in.Env, c.dbf, c.olderThan, &c.scope, &c.dry, &c.batch, &c.json
	olderThan := duration.Format(c.olderThan)
	db, err := clikit.OpenMigrated(ctx, dbf, 2)
	if err != nil {
		return in.Fail(clikit.ExitUsage, "%v", err)
	}
	defer db.Close()
	now := time.Now()
	before := now.Add(-retention)
	start := time.Now()
	// On a partitioned inbox, whole partitions go (all-scope purges only).
	var partitions []int64
	if pd := periodsOf(db); pd != nil && *scope == "" {
		if partitions, err = expiredPeriods(ctx, pd, before); err != nil {
			fmt.Fprintf(env.Stderr, "txinbox purge: %s: %v\n", db.Where, err)
			return clikit.ExitFailure
		}
	}
	res, err := purgeOnce(ctx, env, db, dbf, purge.Config{Retention: retention, Scope: *scope, BatchSize: *batch,
		MinBatch: min(*batch, 500), MaxBatch: max(*batch, 50000), Now: func() time.Time { return now }}, *dry)
	if err != nil {
		fmt.Fprintf(env.Stderr, "txinbox purge: %s: %v\n", db.Where, err)
		return clikit.ExitFailure
	}
	as4n, outboxn := res.Tables["as4_messages"], res.Tables["outbox_sent"]
	out := map[string]any{"dry_run": *dry, "before": before.UTC(), "inbox": res.Inbox, "attempts": res.Attempts,
		"drift": res.Drift, "as4_messages": as4n, "outbox_sent": outboxn, "partitions": partitions,
		"seconds": time.Since(start).Seconds()}
	if *asJSON {
		json.NewEncoder(env.Stdout).Encode(out) //nolint:errcheck // stdout
		return clikit.ExitOK
	}
	verb := "purged"
	if *dry {
		verb = "would purge"
	}
	fmt.Fprintf(env.Stdout, "%s %d inbox rows, %d attempt rows, %d drift records older than %s (before %s) in %.1fs\n",
		verb, res.Inbox, res.Attempts, res.Drift, olderThan, before.UTC().Format(time.RFC3339), time.Since(start).Seconds())
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
	return clikit.ExitOK
}

// purgeOnce runs one purge round (or, dry, counts it) of the inbox, and of
// the AS4 messages (when serve created their tables) and the sent outbox
// rows as old; progress on a terminal.
func purgeOnce(ctx context.Context, env *clikit.Env, db *clikit.InboxDB, dbf clikit.DBFlags, cfg purge.Config, dry bool) (purge.Result, error) {
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
	p, err := purge.New(db.Admin.(store.Purger), cfg)
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
func purgeTables(ctx context.Context, db *clikit.InboxDB, dbf clikit.DBFlags) ([]purge.Table, error) {
	type as4Purger interface {
		Exists(context.Context) (bool, error)
		Expired(context.Context, time.Time) (int64, error)
		Purge(context.Context, time.Time, int) (int64, error)
	}
	var as4 as4Purger
	var err error
	switch {
	case db.My != nil:
		as4, err = as4my.New(db.My.DB(), as4my.Options{TablePrefix: dbf.Prefix})
	case db.PG != nil:
		as4, err = as4pg.New(db.PG.Pool(), as4pg.Options{Schema: dbf.Schema, TablePrefix: dbf.Prefix})
	case db.SQLPG != nil:
		as4, err = as4pg.NewSQL(db.SQLPG.DB(), as4pg.Options{Schema: dbf.Schema, TablePrefix: dbf.Prefix})
	default:
		as4, err = as4sqlite.New(db.Lite.DB(), as4sqlite.Options{TablePrefix: dbf.Prefix})
	}
	if err != nil {
		return nil, err
	}
	ok, err := as4.Exists(ctx)
	if err != nil {
		return nil, fmt.Errorf("AS4 tables: %w", err)
	}
	ob := db.OutboxStore()
	tables := []purge.Table{{Name: "outbox_sent", Purge: ob.PurgeSent, Count: ob.SentBefore}}
	if ok {
		tables = append([]purge.Table{{Name: "as4_messages", Purge: as4.Purge, Count: as4.Expired}}, tables...)
	}
	return tables, nil
}

// expiredPeriods lists the periods whose partitions a purge with this
// cut-off drops; none for an unpartitioned inbox.
// periodLister is what pgstore's and pgdbstore's drivers share to list the
// partitioned layout's periods.
type periodLister interface {
	Periods(ctx context.Context) ([]pgstore.Period, error)
}

// periodsOf is db's PostgreSQL driver, nil on SQLite.
func periodsOf(db *clikit.InboxDB) periodLister {
	switch {
	case db.PG != nil:
		return db.PG
	case db.SQLPG != nil:
		return db.SQLPG
	}
	return nil
}

func expiredPeriods(ctx context.Context, d periodLister, before time.Time) ([]int64, error) {
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
