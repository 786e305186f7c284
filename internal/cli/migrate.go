package cli

import (
	"context"
	"flag"
	"fmt"
)

func init() {
	register("migrate", "create or upgrade the inbox tables (safe to run twice, and concurrently)", runMigrate)
}

func runMigrate(ctx context.Context, env *Env, args []string) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var dbf dbFlags
	dbf.register(fs, env)
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	db, err := openDB(ctx, dbf, 2)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox migrate:", err)
		return ExitUsage
	}
	defer db.close()
	if err := db.admin.Migrate(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "txinbox migrate: %s: %v\n", db.where, err)
		return ExitFailure
	}
	fmt.Fprintf(env.Stdout, "migrated %s (%s)\n", db.where, db.kind)
	return ExitOK
}
