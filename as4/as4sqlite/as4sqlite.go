// Package as4sqlite stores received AS4 messages in SQLite, in the inbox
// transaction of store/sqlitestore (*sql.Tx).
//
//	st, _ := as4sqlite.New(driver.DB(), as4sqlite.Options{})
//	_ = st.Migrate(ctx)
//	h, _ := as4.New(driver, as4.Config[*sql.Tx]{Store: st})
package as4sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/as4sql"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configures a Store. Use the inbox's sqlitestore TablePrefix, so
// the AS4 tables sit next to the inbox tables.
type Options struct {
	// TablePrefix is prepended to the table names (as4_messages,
	// as4_payloads). Defaults to "txinbox_".
	TablePrefix string
}

// Store is an as4.Store[*sql.Tx].
type Store struct {
	db *sql.DB
	t  as4sql.Tables
}

var _ as4.Store[*sql.Tx] = (*Store)(nil)

// New returns a Store on db, the inbox's database (sqlitestore's DB()).
func New(db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("as4sqlite: New: db is nil")
	}
	if opts.TablePrefix == "" {
		opts.TablePrefix = "txinbox_"
	}
	t, err := as4sql.NewTables("as4sqlite", "", opts.TablePrefix)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, t: t}, nil
}

// Migrate creates the tables if they do not exist, in one transaction.
func (s *Store) Migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	for _, n := range names {
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.t.Expand(string(b))); err != nil {
			return fmt.Errorf("as4sqlite: %s: %w", n, err)
		}
	}
	return tx.Commit()
}

// Save stores m in tx, replacing rows of an earlier message with the same
// key (left behind when only the inbox row was purged).
func (s *Store) Save(ctx context.Context, tx *sql.Tx, m *as4.Received) error {
	if _, err := tx.ExecContext(ctx, s.t.Expand(`DELETE FROM {payloads} WHERE scope = $1 AND message_key = $2`), m.Scope, m.Key); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.t.Expand(`DELETE FROM {messages} WHERE scope = $1 AND message_key = $2`), m.Scope, m.Key); err != nil {
		return err
	}
	at := m.ReceivedAt.UTC().Format("2006-01-02T15:04:05.000000000Z")
	if _, err := tx.ExecContext(ctx, s.t.Expand(`INSERT INTO {messages} (`+as4sql.MessageColumns+`) VALUES (`+as4sql.Placeholders(20)+`)`),
		as4sql.MessageArgs(m, at)...); err != nil {
		return err
	}
	for i := range m.Parts {
		if _, err := tx.ExecContext(ctx, s.t.Expand(`INSERT INTO {payloads} (`+as4sql.PayloadColumns+`) VALUES (`+as4sql.Placeholders(11)+`)`),
			as4sql.PayloadArgs(m, i)...); err != nil {
			return err
		}
	}
	return nil
}

// Receipt returns the receipt stored with the message (scope, key).
func (s *Store) Receipt(ctx context.Context, scope, key string) (as4.StoredReceipt, error) {
	var r as4.StoredReceipt
	err := s.db.QueryRowContext(ctx, s.t.Expand(`SELECT receipt_message_id, receipt_content_type, receipt
		FROM {messages} WHERE scope = $1 AND message_key = $2`), scope, key).Scan(&r.MessageID, &r.ContentType, &r.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return r, as4.ErrNotFound
	}
	return r, err
}

// Purge deletes up to limit messages received before before, with their
// payloads, in one short transaction. It returns how many messages it
// deleted.
func (s *Store) Purge(ctx context.Context, before time.Time, limit int) (int64, error) {
	at := before.UTC().Format("2006-01-02T15:04:05.000000000Z")
	victims := `SELECT scope, message_key FROM {messages} WHERE received_at < ? ORDER BY received_at LIMIT ?`
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if _, err := tx.ExecContext(ctx, s.t.Expand(`DELETE FROM {payloads} WHERE (scope, message_key) IN (`+victims+`)`), at, limit); err != nil {
		return 0, err
	}
	r, err := tx.ExecContext(ctx, s.t.Expand(`DELETE FROM {messages} WHERE (scope, message_key) IN (`+victims+`)`), at, limit)
	if err != nil {
		return 0, err
	}
	n, _ := r.RowsAffected()
	return n, tx.Commit()
}

// Exists reports whether the AS4 tables were created (by Migrate), so that
// a purge of a database without them leaves them alone.
func (s *Store) Exists(ctx context.Context) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`,
		s.t.Prefix+"as4_messages").Scan(&n)
	return n > 0, err
}

// Expired counts the messages received before before: what Purge would
// delete, for a dry run.
func (s *Store) Expired(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, s.t.Expand(`SELECT count(*) FROM {messages} WHERE received_at < ?`),
		before.UTC().Format("2006-01-02T15:04:05.000000000Z")).Scan(&n)
	return n, err
}
