package serve

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/server"
)

// TestSampleConfigLoads: the repository's txinbox.yaml loads into a
// server.Config: every listed source by its name and scope, the AS4
// endpoint, the retentions and the purger (the database is a SQLite file
// of the test's instead of the sample's PostgreSQL; nothing connects).
func TestSampleConfigLoads(t *testing.T) {
	env := &clikit.Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	o, err := parseServeFlags(env, []string{"--config", filepath.Join("..", "..", "..", "txinbox.yaml"),
		"--db", filepath.Join(t.TempDir(), "sample.db"), "--as4-listen", "127.0.0.1:0", "--http-listen", ""})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sqliteServer(t, env, &o).Config()
	want := "orders/orders/45d invoices/invoices/60d returns/returns/45d refunds/refunds/45d"
	if got := sourceRetentions(cfg); got != want {
		t.Errorf("sources %v, want %s", got, want)
	}
	if len(cfg.Endpoints) != 1 || cfg.Endpoints[0].Name != "as4" || cfg.Endpoints[0].RetryWindow.Within != 7*24*time.Hour {
		t.Errorf("endpoints %+v, want as4 with a 7d retry window", cfg.Endpoints)
	}
	if cfg.Retention.Keep != 45*24*time.Hour || cfg.Purge == nil || len(cfg.Purge.Tables) != 1 || cfg.ShutdownTimeout != 30*time.Second {
		t.Errorf("retention %v, purge %+v, shutdown %s", cfg.Retention, cfg.Purge, cfg.ShutdownTimeout)
	}
}

// parseServeFlags parses serve's command line as txinbox serve does: the
// flags, the environment, then --config.
func parseServeFlags(env *clikit.Env, args []string) (serveOptions, error) {
	c := &Command{}
	fs := clikit.NewFlagSet("serve")
	c.Define(fs, env)
	if _, err := fs.ParseAll(args, env.Getenv); err != nil {
		return c.o, err
	}
	err := c.o.finish(fs.FlagSet, env, *c.config)
	return c.o, err
}

// sqliteServer builds serve's server of o as serve does, over the SQLite
// database of o; nothing connects or runs.
func sqliteServer(t *testing.T, env *clikit.Env, o *serveOptions) *server.Server {
	t.Helper()
	ctx := context.Background()
	db, err := clikit.OpenDB(ctx, o.db, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Admin.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	newAS4 := func(ctx context.Context) (as4.Store[*sql.Tx], error) { return sqliteAS4(ctx, db, o) }
	eff, err := newEffect[*sql.Tx](ctx, o, db, db.Lite)
	if err != nil {
		t.Fatal(err)
	}
	srv, closeAll, _, err := buildServer[*sql.Tx](ctx, env, o, db, db.Lite, eff, newAS4, slog.New(slog.DiscardHandler), nil)
	t.Cleanup(closeAll)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// sourceRetentions lists cfg's sources as name/scope/retention.
func sourceRetentions(cfg server.Config) string {
	var got []string
	for _, s := range cfg.Sources {
		got = append(got, s.Name+"/"+s.Scope+"/"+duration.Format(s.Retention.Keep))
	}
	return strings.Join(got, " ")
}
