package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgdbstore"
	"github.com/txinbox/txinbox/store/pgstore"
)

// migrateCommand is txinbox migrate.
type migrateCommand struct {
	dbf         clikit.DBFlags
	partitioned bool
	period      time.Duration
}

func (c *migrateCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "migrate", Summary: "create or upgrade the inbox tables (safe to run twice, and concurrently)",
		Description: `Applies the embedded, versioned migrations to the database at --db: a
PostgreSQL URL, or a SQLite file (created if missing). It is safe to run
twice and from several processes at once. --partitioned (PostgreSQL, chosen
at the first migrate) creates an inbox partitioned by period, purged by
dropping whole partitions (see docs/operations.md).`,
		Examples: []clikit.Example{{Command: "txinbox migrate --db postgres://localhost/billing"},
			{Command: "txinbox migrate --db inbox.db", What: "a SQLite file"},
			{Command: "txinbox migrate --db postgres://localhost/billing --partitioned --partition-period 7d"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "migrated"}, {Code: clikit.ExitFailure, What: "a migration failed"},
			{Code: clikit.ExitUsage, What: "bad flags, or the database cannot be opened or reached"}}}
}

func (c *migrateCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	c.dbf.Define(fs)
	fs.Group("Partitions (PostgreSQL)", func() {
		fs.BoolVar(&c.partitioned, "partitioned", false, "create the inbox partitioned by period, purged by dropping partitions (chosen at the first migrate)")
		clikit.DurationFlag(fs.FlagSet, &c.period, "partition-period", 7*duration.Day, false, "with --partitioned: how long one partition receives new rows (e.g. a quarter of the retention)")
	})
}

func (c *migrateCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	db, err := clikit.OpenDB(ctx, c.dbf, 2)
	if err != nil {
		return in.Fail(clikit.ExitUsage, "%v", err)
	}
	defer db.Close()
	if c.partitioned {
		var d store.Admin
		switch {
		case db.PG != nil:
			d, err = pgstore.New(db.PG.Pool(), pgstore.Options{Schema: c.dbf.Schema, TablePrefix: c.dbf.Prefix, Partitioned: true, PartitionPeriod: c.period})
		case db.SQLPG != nil:
			d, err = pgdbstore.New(db.SQLPG.DB(), pgdbstore.Options{Schema: c.dbf.Schema, TablePrefix: c.dbf.Prefix, Partitioned: true, PartitionPeriod: c.period})
		default:
			return clikit.UsageError(in.Env, in.Path, "--partitioned applies to PostgreSQL only")
		}
		if err != nil {
			return clikit.UsageError(in.Env, in.Path, "--partition-period: "+err.Error())
		}
		db.Admin = d
	}
	if err := db.Admin.Migrate(ctx); err != nil {
		return in.Fail(clikit.ExitFailure, "%s: %v", db.Where, err)
	}
	fmt.Fprintf(in.Env.Stdout, "migrated %s (%s)\n", db.Where, db.Kind)
	return clikit.ExitOK
}
