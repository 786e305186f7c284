package clikit

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/outbox/outboxmy"
	"github.com/txinbox/txinbox/outbox/outboxpg"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
	"github.com/txinbox/txinbox/store/pgdbstore"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/schema"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// DBFlags are the database flags shared by the commands.
type DBFlags struct {
	// URL is --db: a postgres:// URL or a SQLite file path.
	URL string
	// Schema is --schema, the PostgreSQL schema of the inbox tables.
	Schema string
	// Prefix is --table-prefix, the prefix of the inbox table names.
	Prefix string
}

// Register defines --db, --schema and --table-prefix. (The environment's
// TXINBOX_DB and the others are read by Main, as for every flag; env is
// unused.)
func (f *DBFlags) Register(fs *flag.FlagSet, _ *Env) {
	fs.StringVar(&f.URL, "db", "", "database: a postgres:// URL (txinbox_store=database/sql in it: the database/sql store), a mysql:// URL (MySQL or MariaDB) or a SQLite file path")
	fs.StringVar(&f.Schema, "schema", "", "PostgreSQL schema of the inbox tables (default: the search_path's)")
	fs.StringVar(&f.Prefix, "table-prefix", "txinbox_", "prefix of the inbox table names")
}

// Define defines the database flags in the group "Database", --db
// required.
func (f *DBFlags) Define(fs *FlagSet) {
	fs.Group("Database", func() { f.Register(fs.FlagSet, nil) })
	fs.Require("db")
}

// OpenMigrated opens the inbox that the flags name for a command that reads
// or maintains it (openMigrated); on an error it prints it and returns
// nil and the exit status.
func (f *DBFlags) OpenMigrated(ctx context.Context, in *Invocation) (*InboxDB, int) {
	db, err := OpenMigrated(ctx, *f, 2)
	if err != nil {
		return nil, in.Fail(ExitUsage, "%v", err)
	}
	return db, ExitOK
}

// InboxDB is an open inbox database of either kind, on one of three
// stores: pgstore (PG), pgdbstore (SQLPG: a postgres:// URL with
// txinbox_store=database/sql) or sqlitestore (Lite).
type InboxDB struct {
	// Kind is "postgres", "mysql" or "sqlite".
	Kind string
	// Where is the URL without password, or the file path.
	Where string
	// Admin is the store's admin interface (status, dead letters, ...).
	Admin store.Admin
	// PG is the PostgreSQL driver on pgx, nil otherwise.
	PG *pgstore.Driver
	// SQLPG is the PostgreSQL driver on database/sql, nil otherwise.
	SQLPG *pgdbstore.Driver
	// Lite is the SQLite driver, nil for PostgreSQL.
	Lite *sqlitestore.Driver
	// My is the MySQL (and MariaDB) driver, nil otherwise.
	My *mysqlstore.Driver
	// SQL is the store whose handlers get a *sql.Tx: SQLPG, My or Lite
	// (nil on pgstore).
	SQL store.Driver[*sql.Tx]
	// sqlDB is SQL's database.
	sqlDB *sql.DB
	// Close closes the pool or the file.
	Close func()
}

// IsPostgresURL reports whether u names a PostgreSQL database: a
// postgres:// URL or a keyword/value DSN ("host=... dbname=...").
func IsPostgresURL(u string) bool {
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

// servedSchemes are the URL schemes --db serves; any other "scheme://"
// is refused by CheckScheme, naming it, rather than taken for the name of
// a SQLite file.
var servedSchemes = []string{"postgres", "postgresql", "mysql", "mariadb", "sqlite", "file"}

// schemeRE is a URL's scheme (RFC 3986: a letter, then letters, digits,
// "+", "-" or ".") followed by "://".
var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// CheckScheme refuses a --db URL whose scheme txinbox does not serve
// (sqlserver://, mysql:// in a build without it, a typo such as
// postgress://), naming the scheme: without it, the URL would be opened
// as a SQLite file of that name ("unable to open database file").
func CheckScheme(url string) error {
	m := schemeRE.FindStringSubmatch(url)
	if m == nil {
		return nil
	}
	scheme := strings.ToLower(m[1])
	if slices.Contains(servedSchemes, scheme) {
		return nil
	}
	return fmt.Errorf("--db: txinbox does not serve the scheme %q (%s://...); use postgres://, mysql:// (MySQL or MariaDB) "+
		"or a SQLite file path", m[1], m[1])
}

// IsMySQLURL reports whether u names a MySQL or MariaDB database: a
// mysql:// (or mariadb://) URL, or go-sql-driver's DSN
// (user:pass@tcp(host:port)/db).
func IsMySQLURL(u string) bool {
	return strings.HasPrefix(u, "mysql://") || strings.HasPrefix(u, "mariadb://") ||
		strings.Contains(u, "@tcp(") || strings.Contains(u, "@unix(") || strings.HasPrefix(u, "tcp(")
}

// openMySQL opens a MySQL or MariaDB --db.
func openMySQL(ctx context.Context, f DBFlags, maxConns int32) (*InboxDB, error) {
	if f.Schema != "" {
		return nil, errors.New("--schema applies to PostgreSQL only; on MySQL the URL names the database (use --table-prefix)")
	}
	dsn := f.URL
	if rest, ok := strings.CutPrefix(dsn, "mariadb://"); ok {
		dsn = "mysql://" + rest
	}
	cfg, err := mysqlstore.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("--db: %w", err)
	}
	c, err := mysqlstore.Connector(cfg)
	if err != nil {
		return nil, fmt.Errorf("--db: %w", err)
	}
	db := sql.OpenDB(c)
	if maxConns > 0 {
		db.SetMaxOpenConns(int(maxConns))
	}
	where := mysqlstore.Redact(cfg)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, ConnectError{fmt.Errorf("connecting to %s: %w", where, err)}
	}
	d, err := mysqlstore.New(db, mysqlstore.Options{TablePrefix: f.Prefix})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &InboxDB{Kind: "mysql", Where: where, Admin: d, My: d, SQL: d, sqlDB: db, Close: func() { db.Close() }}, nil
}

// OpenDB opens the inbox database that f names: a PostgreSQL URL, a MySQL
// or MariaDB URL (or go-sql-driver's DSN), or else a SQLite file path (a
// "sqlite://" or "file:" prefix is accepted). A URL of any other scheme is
// refused (CheckScheme).
func OpenDB(ctx context.Context, f DBFlags, maxConns int32) (*InboxDB, error) {
	if f.URL == "" {
		return nil, errors.New("--db is required: a postgres:// or mysql:// URL or a SQLite file path")
	}
	if err := CheckScheme(f.URL); err != nil {
		return nil, err
	}
	if IsMySQLURL(f.URL) {
		return openMySQL(ctx, f, maxConns)
	}
	if IsPostgresURL(f.URL) {
		choice, dsn, err := choosePG(f.URL)
		if err != nil {
			return nil, err
		}
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		if choice.sql {
			return openSQLPG(ctx, f, cfg, choice, maxConns)
		}
		if maxConns > 0 && !strings.Contains(f.URL, "pool_max_conns") {
			cfg.MaxConns = maxConns
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		pool, err := pgxpool.NewWithConfig(pctx, cfg)
		if err == nil {
			err = pool.Ping(pctx)
		}
		where := Redact(cfg)
		if err != nil {
			if pool != nil {
				pool.Close()
			}
			if strings.Contains(err.Error(), "unsupported startup parameter") {
				err = fmt.Errorf("%w (a connection pooler such as PgBouncer refuses it: leave it out of the URL; for search_path, give --schema)", err)
			}
			return nil, ConnectError{fmt.Errorf("connecting to %s: %w", where, err)}
		}
		d, err := pgstore.New(pool, pgstore.Options{Schema: f.Schema, TablePrefix: f.Prefix})
		if err == nil {
			_, err = d.CheckPooler(pctx)
		}
		if err != nil {
			pool.Close()
			return nil, err
		}
		return &InboxDB{Kind: "postgres", Where: where, Admin: d, PG: d, Close: pool.Close}, nil
	}
	if f.Schema != "" {
		return nil, errors.New("--schema applies to PostgreSQL only; SQLite has no schemas (use --table-prefix)")
	}
	path := sqlitePath(f.URL)
	d, err := sqlitestore.Open(path, sqlitestore.Options{TablePrefix: f.Prefix})
	if err != nil {
		return nil, err
	}
	return &InboxDB{Kind: "sqlite", Where: path, Admin: d, Lite: d, SQL: d, sqlDB: d.DB(), Close: func() { d.Close() }}, nil
}

// ConnectError is OpenDB's error when the database does not answer: a
// failure of the run (exit 1), not bad input.
type ConnectError struct{ error }

// Unwrap returns the connection error.
func (e ConnectError) Unwrap() error { return e.error }

// sqlitePath is the file path of a SQLite --db ("sqlite://" and "file:"
// prefixes removed).
func sqlitePath(url string) string {
	return strings.TrimPrefix(strings.TrimPrefix(url, "sqlite://"), "file:")
}

// Redact is the URL of cfg without its password, every host of a
// multi-host URL named (the one in use may be any of them after a
// failover).
func Redact(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	hosts := []string{net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))}
	for _, f := range c.Fallbacks {
		if h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return fmt.Sprintf("postgres://%s@%s/%s", c.User, strings.Join(hosts, ","), c.Database)
}

// Exec runs one statement outside any inbox transaction. Statements use
// $1, $2, ... placeholders, which PostgreSQL and SQLite accept; for MySQL
// they become "?" (each must appear once, in order).
func (db *InboxDB) Exec(ctx context.Context, sqlText string, args ...any) error {
	if db.PG != nil {
		_, err := db.PG.Pool().Exec(ctx, sqlText, args...)
		return err
	}
	_, err := db.sqlDB.ExecContext(ctx, db.placeholders(sqlText), args...)
	return err
}

var dollarParam = regexp.MustCompile(`\$[0-9]+`)

// placeholders turns $1, $2, ... into MySQL's "?".
func (db *InboxDB) placeholders(sqlText string) string {
	if db.My == nil {
		return sqlText
	}
	return MySQLPlaceholders(sqlText)
}

// MySQLPlaceholders turns the $1, $2, ... of a statement into "?" (each
// must appear once, in order).
func MySQLPlaceholders(sqlText string) string { return dollarParam.ReplaceAllString(sqlText, "?") }

// MySQLTxExec is SQLTxExec for MySQL: $1, $2, ... become "?".
func MySQLTxExec(ctx context.Context, tx *sql.Tx, sqlText string, args ...any) error {
	_, err := tx.ExecContext(ctx, MySQLPlaceholders(sqlText), args...)
	return err
}

// SQLExec is the TxExecFunc of db's database/sql store.
func (db *InboxDB) SQLExec() TxExecFunc[*sql.Tx] {
	if db.My != nil {
		return MySQLTxExec
	}
	return SQLTxExec
}

// Query runs a query and calls fn for each row with the scan targets.
func (db *InboxDB) Query(ctx context.Context, sqlText string, args []any, dest []any, fn func() error) error {
	if db.PG != nil {
		rows, _ := db.PG.Pool().Query(ctx, sqlText, args...)
		_, err := pgx.ForEachRow(rows, dest, fn)
		return err
	}
	rows, err := db.sqlDB.QueryContext(ctx, db.placeholders(sqlText), args...)
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

// PGTxExec and SQLTxExec adapt each store's transaction to one "execute a statement"
// function, for handlers written once for both databases.
func PGTxExec(ctx context.Context, tx pgx.Tx, sqlText string, args ...any) error {
	_, err := tx.Exec(ctx, sqlText, args...)
	return err
}

// SQLTxExec is PGTxExec for SQLite's *sql.Tx.
func SQLTxExec(ctx context.Context, tx *sql.Tx, sqlText string, args ...any) error {
	_, err := tx.ExecContext(ctx, sqlText, args...)
	return err
}

// Ping checks that the database answers and takes writes: a PostgreSQL
// standby in recovery (a URL that reached the standby, without
// target_session_attrs=read-write, or a primary demoted behind a stale
// address) and a MySQL server with read_only on answer every query but
// fail every batch, so serve's /readyz must not call them ready.
func (db *InboxDB) Ping(ctx context.Context) error {
	var readOnly bool
	var err error
	switch {
	case db.PG != nil:
		err = db.PG.Pool().QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&readOnly)
	case db.SQLPG != nil:
		err = db.sqlDB.QueryRowContext(ctx, "SELECT pg_is_in_recovery()").Scan(&readOnly)
	case db.My != nil:
		err = db.sqlDB.QueryRowContext(ctx, "SELECT @@read_only").Scan(&readOnly)
	default:
		return db.sqlDB.PingContext(ctx)
	}
	if err == nil && readOnly {
		err = db.readOnlyError()
	}
	return err
}

// readOnlyError names why a server that answers takes no writes.
func (db *InboxDB) readOnlyError() error {
	if db.Kind == "mysql" {
		return errors.New("the server is read-only (read_only=ON: a replica?): point --db at the primary")
	}
	return errors.New("the server is a standby in recovery (read-only): point --db at the primary, " +
		"or list every host in the URL with target_session_attrs=read-write")
}

// OpenMigrated opens the database like OpenDB for a command that only reads
// or maintains an existing inbox (status, inspect, dlq, purge, ...): a SQLite
// file that does not exist is an error rather than a new empty database, and
// tables that were never migrated are named as such.
func OpenMigrated(ctx context.Context, f DBFlags, maxConns int32) (*InboxDB, error) {
	if err := CheckScheme(f.URL); err != nil {
		return nil, err
	}
	if f.URL != "" && !IsPostgresURL(f.URL) && !IsMySQLURL(f.URL) {
		path := sqlitePath(f.URL)
		if st, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("--db: %w (create the inbox with txinbox migrate --db %s)", err, path)
		} else if st.IsDir() {
			return nil, fmt.Errorf("--db: %s is a directory, not a SQLite file", path)
		}
	}
	db, err := OpenDB(ctx, f, maxConns)
	if err != nil {
		return nil, err
	}
	migrations := db.Tables().Migrations
	var n int64
	if err := db.Query(ctx, "SELECT count(*) FROM "+migrations, nil, []any{&n}, func() error { return nil }); err != nil || n == 0 {
		db.Close()
		if err == nil {
			err = errors.New("no migration applied")
		}
		return nil, fmt.Errorf("%s has no txinbox tables (%s: %v): run txinbox migrate first, or give the --schema and --table-prefix they were migrated with", db.Where, migrations, err)
	}
	return db, nil
}

// Tables are the quoted names of the inbox tables.
func (db *InboxDB) Tables() schema.Tables {
	switch {
	case db.PG != nil:
		return db.PG.Tables()
	case db.My != nil:
		return db.My.Tables()
	case db.SQLPG != nil:
		return db.SQLPG.Tables()
	}
	return db.Lite.Tables()
}

// Checkpoints returns the partition watermarks of scope and source
// (offsets as the inbox).
func (db *InboxDB) Checkpoints(ctx context.Context, scope, source string) (map[int32]int64, error) {
	switch {
	case db.PG != nil:
		return db.PG.Checkpoints(ctx, scope, source)
	}
	return db.SQL.Checkpoints(ctx, scope, source)
}

// OutboxTable is the quoted name of the outbox table.
func (db *InboxDB) OutboxTable() string { return db.Tables().Outbox }

// OutboxStore is the outbox table of db.
func (db *InboxDB) OutboxStore() outbox.Store {
	switch {
	case db.PG != nil:
		return outboxpg.New(db.PG)
	case db.My != nil:
		return outboxmy.New(db.My)
	case db.SQLPG != nil:
		return outboxpg.NewSQL(db.SQLPG)
	}
	return outboxlite.New(db.Lite)
}

// TxExecFunc executes one statement in a store's transaction (PGTxExec,
// SQLTxExec).
type TxExecFunc[TTx any] func(ctx context.Context, tx TTx, sql string, args ...any) error
