// Package as4pg stores received AS4 messages in PostgreSQL, in the inbox
// transaction of store/pgstore (pgx.Tx: Store) or of store/pgdbstore
// (*sql.Tx: SQLStore); the SQL is written once for both (internal/pgseam).
//
//	st, _ := as4pg.New(pool, as4pg.Options{})
//	_ = st.Migrate(ctx)
//	h, _ := as4.New(driver, as4.Config[pgx.Tx]{Store: st})
//
//	st, _ := as4pg.NewSQL(driver.DB(), as4pg.Options{}) // pgdbstore
//	h, _ := as4.New(driver, as4.Config[*sql.Tx]{Store: st})
package as4pg

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/as4sql"
	"github.com/txinbox/txinbox/internal/pgseam"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configures a Store. Use the same values as for the inbox's
// pgstore.Options, so the AS4 tables sit next to the inbox tables.
type Options struct {
	// Schema holds the tables; Migrate creates it if missing. Defaults to
	// none: the connection's search_path.
	Schema string
	// TablePrefix is prepended to the table names (as4_messages,
	// as4_payloads). Defaults to "txinbox_".
	TablePrefix string
}

// Store is an as4.Store[pgx.Tx] (pgstore).
type Store struct{ tables }

// SQLStore is an as4.Store[*sql.Tx] (pgdbstore, on any database/sql
// PostgreSQL driver): Store's tables and SQL.
type SQLStore struct{ tables }

// tables is the code Store and SQLStore share.
type tables struct {
	db     pgseam.DB
	schema string
	t      as4sql.Tables
}

var (
	_ as4.Store[pgx.Tx]  = (*Store)(nil)
	_ as4.Store[*sql.Tx] = (*SQLStore)(nil)
	_ as4.Lister         = (*SQLStore)(nil)
)

// New returns a Store on pool.
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("as4pg: New: pool is nil")
	}
	t, err := newTables(pgseam.Pgx(pool), opts)
	return &Store{t}, err
}

// NewSQL returns a SQLStore on db, the inbox's database (pgdbstore's DB()).
func NewSQL(db *sql.DB, opts Options) (*SQLStore, error) {
	if db == nil {
		return nil, errors.New("as4pg: NewSQL: db is nil")
	}
	t, err := newTables(pgseam.SQL(db), opts)
	return &SQLStore{t}, err
}

func newTables(db pgseam.DB, opts Options) (tables, error) {
	if opts.TablePrefix == "" {
		opts.TablePrefix = "txinbox_"
	}
	t, err := as4sql.NewTables("as4pg", opts.Schema, opts.TablePrefix)
	return tables{db: db, schema: opts.Schema, t: t}, err
}

// Migrate creates the tables if they do not exist. The migrations are
// idempotent; an advisory lock makes concurrent starts take turns.
func (s *tables) Migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	return pgseam.InTx(ctx, s.db, func(tx pgseam.Querier) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('txinbox.as4.migrate.' || $1, 0))`, s.t.Messages); err != nil {
			return err
		}
		if s.schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS "`+s.schema+`"`); err != nil {
				return err
			}
		}
		for _, n := range names {
			b, err := migrationFS.ReadFile(n)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, s.t.Expand(string(b))); err != nil {
				return fmt.Errorf("as4pg: %s: %w", n, err)
			}
		}
		return nil
	})
}

// Save stores m in tx, replacing rows of an earlier message with the same
// key (left behind when only the inbox row was purged).
func (s *Store) Save(ctx context.Context, tx pgx.Tx, m *as4.Received) error {
	return pgseam.PgxTx(tx).ExecAll(ctx, s.saveStmts(m))
}

// Save stores m in tx, replacing rows of an earlier message with the same
// key (left behind when only the inbox row was purged).
func (s *SQLStore) Save(ctx context.Context, tx *sql.Tx, m *as4.Received) error {
	return pgseam.SQLTx(tx).ExecAll(ctx, s.saveStmts(m))
}

// saveStmts are Save's statements: on pgx, one round trip.
func (s *tables) saveStmts(m *as4.Received) []pgseam.Stmt {
	stmts := []pgseam.Stmt{
		{SQL: s.t.Expand(`DELETE FROM {messages} WHERE scope = $1 AND message_key = $2`), Args: []any{m.Scope, m.Key}},
		{SQL: s.t.Expand(`INSERT INTO {messages} (` + as4sql.MessageColumns + `) VALUES (` + as4sql.Placeholders(20) + `)`),
			Args: as4sql.MessageArgs(m, m.ReceivedAt)},
	}
	for i := range m.Parts {
		stmts = append(stmts, pgseam.Stmt{SQL: s.t.Expand(`INSERT INTO {payloads} (` + as4sql.PayloadColumns + `) VALUES (` +
			as4sql.Placeholders(11) + `)`), Args: as4sql.PayloadArgs(m, i)})
	}
	return stmts
}

// Receipt returns the receipt stored with the message (scope, key).
func (s *tables) Receipt(ctx context.Context, scope, key string) (as4.StoredReceipt, error) {
	var r as4.StoredReceipt
	err := pgseam.QueryRow(ctx, s.db, s.t.Expand(`SELECT receipt_message_id, receipt_content_type, receipt
		FROM {messages} WHERE scope = $1 AND message_key = $2`), []any{scope, key}, &r.MessageID, &r.ContentType, &r.Body)
	if errors.Is(err, pgseam.ErrNoRows) {
		return r, as4.ErrNotFound
	}
	return r, err
}

// Purge deletes up to limit messages received before before, with their
// payloads, in one short transaction, skipping rows that others hold
// locks on. It returns how many messages it deleted.
func (s *tables) Purge(ctx context.Context, before time.Time, limit int) (int64, error) {
	return s.db.Exec(ctx, s.t.Expand(`WITH v AS (
	SELECT scope, message_key FROM {messages} WHERE received_at < $1 ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED),
p AS (DELETE FROM {payloads} d USING v WHERE d.scope = v.scope AND d.message_key = v.message_key)
DELETE FROM {messages} m USING v WHERE m.scope = v.scope AND m.message_key = v.message_key`), before, limit)
}

// Exists reports whether the AS4 tables were created (by Migrate), so that
// a purge of a database without them leaves them alone.
func (s *tables) Exists(ctx context.Context) (bool, error) {
	var ok bool
	err := pgseam.QueryRow(ctx, s.db, `SELECT to_regclass($1) IS NOT NULL`, []any{s.t.Messages}, &ok)
	return ok, err
}

// Expired counts the messages received before before: what Purge would
// delete, for a dry run.
func (s *tables) Expired(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := pgseam.QueryRow(ctx, s.db, s.t.Expand(`SELECT count(*) FROM {messages} WHERE received_at < $1`), []any{before}, &n)
	return n, err
}
