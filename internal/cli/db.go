package cli

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/schema"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// dbFlags are the database flags shared by the commands.
type dbFlags struct {
	url    string
	schema string
	prefix string
}

// register defines --db, --schema and --table-prefix. (The environment's
// TXINBOX_DB and the others are read by Main, as for every flag; env is
// unused.)
func (f *dbFlags) register(fs *flag.FlagSet, _ *Env) {
	fs.StringVar(&f.url, "db", "", "database: a postgres:// URL or a SQLite file path")
	fs.StringVar(&f.schema, "schema", "", "PostgreSQL schema of the inbox tables (default: the search_path's)")
	fs.StringVar(&f.prefix, "table-prefix", "txinbox_", "prefix of the inbox table names")
}

// define defines the database flags in the group "Database", --db
// required.
func (f *dbFlags) define(fs *flagSet) {
	fs.group("Database", func() { f.register(fs.FlagSet, nil) })
	fs.require("db")
}

// openMigrated opens the inbox that the flags name for a command that reads
// or maintains it (openMigrated); on an error it prints it and returns
// nil and the exit status.
func (f *dbFlags) openMigrated(ctx context.Context, in *invocation) (*inboxDB, int) {
	db, err := openMigrated(ctx, *f, 2)
	if err != nil {
		return nil, in.fail(ExitUsage, "%v", err)
	}
	return db, ExitOK
}

// inboxDB is an open inbox database of either kind.
type inboxDB struct {
	kind  string // "postgres" or "sqlite"
	where string // the URL without password, or the file path
	admin store.Admin
	pg    *pgstore.Driver
	lite  *sqlitestore.Driver
	close func()
}

// isPostgresURL reports whether u names a PostgreSQL database: a
// postgres:// URL or a keyword/value DSN ("host=... dbname=...").
func isPostgresURL(u string) bool {
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		return true
	}
	for _, kw := range []string{"host=", "dbname=", "user=", "port="} {
		if strings.HasPrefix(u, kw) || strings.Contains(u, " "+kw) {
			return true
		}
	}
	return false
}

// openDB opens the inbox database that f names: a PostgreSQL URL, or else a
// SQLite file path (a "sqlite://" or "file:" prefix is accepted).
func openDB(ctx context.Context, f dbFlags, maxConns int32) (*inboxDB, error) {
	if f.url == "" {
		return nil, errors.New("--db is required: a postgres:// URL or a SQLite file path")
	}
	if isPostgresURL(f.url) {
		cfg, err := pgxpool.ParseConfig(f.url)
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		if maxConns > 0 && !strings.Contains(f.url, "pool_max_conns") {
			cfg.MaxConns = maxConns
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		pool, err := pgxpool.NewWithConfig(pctx, cfg)
		if err == nil {
			err = pool.Ping(pctx)
		}
		where := redact(cfg)
		if err != nil {
			if pool != nil {
				pool.Close()
			}
			return nil, connectError{fmt.Errorf("connecting to %s: %w", where, err)}
		}
		d, err := pgstore.New(pool, pgstore.Options{Schema: f.schema, TablePrefix: f.prefix})
		if err != nil {
			pool.Close()
			return nil, err
		}
		return &inboxDB{kind: "postgres", where: where, admin: d, pg: d, close: pool.Close}, nil
	}
	if f.schema != "" {
		return nil, errors.New("--schema applies to PostgreSQL only; SQLite has no schemas (use --table-prefix)")
	}
	path := sqlitePath(f.url)
	d, err := sqlitestore.Open(path, sqlitestore.Options{TablePrefix: f.prefix})
	if err != nil {
		return nil, err
	}
	return &inboxDB{kind: "sqlite", where: path, admin: d, lite: d, close: func() { d.Close() }}, nil
}

// connectError is openDB's error when the database does not answer: a
// failure of the run (exit 1), not bad input.
type connectError struct{ error }

func (e connectError) Unwrap() error { return e.error }

// sqlitePath is the file path of a SQLite --db ("sqlite://" and "file:"
// prefixes removed).
func sqlitePath(url string) string {
	return strings.TrimPrefix(strings.TrimPrefix(url, "sqlite://"), "file:")
}

func redact(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// exec runs one statement outside any inbox transaction. Statements use
// $1, $2, ... placeholders, which both databases accept.
func (db *inboxDB) exec(ctx context.Context, sqlText string, args ...any) error {
	if db.pg != nil {
		_, err := db.pg.Pool().Exec(ctx, sqlText, args...)
		return err
	}
	_, err := db.lite.DB().ExecContext(ctx, sqlText, args...)
	return err
}

// query runs a query and calls fn for each row with the scan targets.
func (db *inboxDB) query(ctx context.Context, sqlText string, args []any, dest []any, fn func() error) error {
	if db.pg != nil {
		rows, _ := db.pg.Pool().Query(ctx, sqlText, args...)
		_, err := pgx.ForEachRow(rows, dest, fn)
		return err
	}
	rows, err := db.lite.DB().QueryContext(ctx, sqlText, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
	}
	return rows.Err()
}

// txExec adapts each store's transaction to one "execute a statement"
// function, for handlers written once for both databases.
func pgTxExec(ctx context.Context, tx pgx.Tx, sqlText string, args ...any) error {
	_, err := tx.Exec(ctx, sqlText, args...)
	return err
}

func sqlTxExec(ctx context.Context, tx *sql.Tx, sqlText string, args ...any) error {
	_, err := tx.ExecContext(ctx, sqlText, args...)
	return err
}

// ping checks that the database answers.
func (db *inboxDB) ping(ctx context.Context) error {
	if db.pg != nil {
		return db.pg.Pool().Ping(ctx)
	}
	return db.lite.DB().PingContext(ctx)
}

// openMigrated opens the database like openDB for a command that only reads
// or maintains an existing inbox (status, inspect, dlq, purge, ...): a SQLite
// file that does not exist is an error rather than a new empty database, and
// tables that were never migrated are named as such.
func openMigrated(ctx context.Context, f dbFlags, maxConns int32) (*inboxDB, error) {
	if f.url != "" && !isPostgresURL(f.url) {
		path := sqlitePath(f.url)
		if st, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("--db: %w (create the inbox with txinbox migrate --db %s)", err, path)
		} else if st.IsDir() {
			return nil, fmt.Errorf("--db: %s is a directory, not a SQLite file", path)
		}
	}
	db, err := openDB(ctx, f, maxConns)
	if err != nil {
		return nil, err
	}
	migrations := db.tables().Migrations
	var n int64
	if err := db.query(ctx, "SELECT count(*) FROM "+migrations, nil, []any{&n}, func() error { return nil }); err != nil || n == 0 {
		db.close()
		if err == nil {
			err = errors.New("no migration applied")
		}
		return nil, fmt.Errorf("%s has no txinbox tables (%s: %v): run txinbox migrate first, or give the --schema and --table-prefix they were migrated with", db.where, migrations, err)
	}
	return db, nil
}

// tables are the quoted names of the inbox tables.
func (db *inboxDB) tables() schema.Tables {
	if db.pg != nil {
		return db.pg.Tables()
	}
	return db.lite.Tables()
}

// outboxTable is the quoted name of the outbox table.
func (db *inboxDB) outboxTable() string { return db.tables().Outbox }

// outboxStore is the outbox table of db.
func (db *inboxDB) outboxStore() outbox.Store {
	if db.pg != nil {
		return outbox.PostgreSQL(db.pg)
	}
	return outbox.SQLite(db.lite)
}

// txExecFunc executes one statement in a store's transaction (pgTxExec,
// sqlTxExec).
type txExecFunc[TTx any] func(ctx context.Context, tx TTx, sql string, args ...any) error
