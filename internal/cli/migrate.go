package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/store/pgstore"
)

func init() {
	register("migrate", "create or upgrade the inbox tables (safe to run twice, and concurrently)", runMigrate)
}

func runMigrate(ctx context.Context, env *Env, args []string) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var dbf dbFlags
	dbf.register(fs, env)
	partitioned := fs.Bool("partitioned", false, "PostgreSQL: create the inbox partitioned by period, purged by dropping partitions (chosen at the first migrate; see docs/operations.md)")
	period := new(time.Duration)
	durationFlag(fs, period, "partition-period", 7*24*time.Hour, false, "with --partitioned: how long one partition receives new rows (e.g. a quarter of the retention)")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	db, err := openDB(ctx, dbf, 2)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox migrate:", err)
		return ExitUsage
	}
	defer db.close()
	if *partitioned {
		if db.pg == nil {
			fmt.Fprintln(env.Stderr, "txinbox migrate: --partitioned applies to PostgreSQL only")
			return ExitUsage
		}
		d, err := pgstore.New(db.pg.Pool(), pgstore.Options{Schema: dbf.schema, TablePrefix: dbf.prefix, Partitioned: true, PartitionPeriod: *period})
		if err != nil {
			fmt.Fprintln(env.Stderr, "txinbox migrate: --partition-period:", err)
			return ExitUsage
		}
		db.admin = d
	}
	if err := db.admin.Migrate(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "txinbox migrate: %s: %v\n", db.where, err)
		return ExitFailure
	}
	fmt.Fprintf(env.Stdout, "migrated %s (%s)\n", db.where, db.kind)
	return ExitOK
}
