package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/store/pgstore"
)

// migrateCommand is txinbox migrate.
type migrateCommand struct {
	dbf         dbFlags
	partitioned bool
	period      time.Duration
}

func (c *migrateCommand) info() commandInfo {
	return commandInfo{Name: "migrate", Summary: "create or upgrade the inbox tables (safe to run twice, and concurrently)",
		Description: `Applies the embedded, versioned migrations to the database at --db: a
PostgreSQL URL, or a SQLite file (created if missing). It is safe to run
twice and from several processes at once. --partitioned (PostgreSQL, chosen
at the first migrate) creates an inbox partitioned by period, purged by
dropping whole partitions (see docs/operations.md).`,
		Examples: []example{{"txinbox migrate --db postgres://localhost/billing", ""},
			{"txinbox migrate --db inbox.db", "a SQLite file"},
			{"txinbox migrate --db postgres://localhost/billing --partitioned --partition-period 7d", ""}},
		ExitCodes: []exitCode{{ExitOK, "migrated"}, {ExitFailure, "a migration failed"},
			{ExitUsage, "bad flags, or the database cannot be opened or reached"}}}
}

func (c *migrateCommand) define(fs *flagSet, _ *Env) {
	c.dbf.define(fs)
	fs.group("Partitions (PostgreSQL)", func() {
		fs.BoolVar(&c.partitioned, "partitioned", false, "create the inbox partitioned by period, purged by dropping partitions (chosen at the first migrate)")
		durationFlag(fs.FlagSet, &c.period, "partition-period", 7*day, false, "with --partitioned: how long one partition receives new rows (e.g. a quarter of the retention)")
	})
}

func (c *migrateCommand) run(ctx context.Context, in *invocation) int {
	db, err := openDB(ctx, c.dbf, 2)
	if err != nil {
		return in.fail(ExitUsage, "%v", err)
	}
	defer db.close()
	if c.partitioned {
		if db.pg == nil {
			return usageError(in.env, in.path, "--partitioned applies to PostgreSQL only")
		}
		d, err := pgstore.New(db.pg.Pool(), pgstore.Options{Schema: c.dbf.schema, TablePrefix: c.dbf.prefix, Partitioned: true, PartitionPeriod: c.period})
		if err != nil {
			return usageError(in.env, in.path, "--partition-period: "+err.Error())
		}
		db.admin = d
	}
	if err := db.admin.Migrate(ctx); err != nil {
		return in.fail(ExitFailure, "%s: %v", db.where, err)
	}
	fmt.Fprintf(in.env.Stdout, "migrated %s (%s)\n", db.where, db.kind)
	return ExitOK
}
