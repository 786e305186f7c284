// Package as4my stores received AS4 messages in MySQL or MariaDB, in the
// inbox transaction of store/mysqlstore (*sql.Tx). The column lists and
// row values are as4pg's and as4sqlite's (as4/internal/as4sql); the table
// layout is MySQL's: binary key columns as long as the inbox's, and
// payloads that reference their message by id (a key of scope, message
// key and part index would pass InnoDB's 3072-byte index limit).
//
//	st, _ := as4my.New(driver.DB(), as4my.Options{})
//	_ = st.Migrate(ctx)
//	h, _ := as4.New(driver, as4.Config[*sql.Tx]{Store: st})
package as4my

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/as4sql"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

//go:embed migrations/001_as4.sql
var migration string

// Options configures a Store. Use the inbox's mysqlstore TablePrefix, so
// the AS4 tables sit next to the inbox tables.
type Options struct {
	// TablePrefix is prepended to the table names (as4_messages,
	// as4_payloads). Defaults to "txinbox_". The tables live in the
	// connection's database.
	TablePrefix string
}

// Store is an as4.Store[*sql.Tx] on mysqlstore's database.
type Store struct {
	db *sql.DB
	t  as4sql.Tables
}

var (
	_ as4.Store[*sql.Tx] = (*Store)(nil)
	_ as4.Lister         = (*Store)(nil)
)

// New returns a Store on db, the inbox's database (mysqlstore's DB()).
func New(db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("as4my: New: db is nil")
	}
	if opts.TablePrefix == "" {
		opts.TablePrefix = "txinbox_"
	}
	t, err := as4sql.NewMySQLTables("as4my", opts.TablePrefix)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, t: t}, nil
}

// statementEnd splits the migration into its statements (one per round
// trip: the store does not ask the DSN for multiStatements).
var statementEnd = regexp.MustCompile(`;\s*\n`)

// Migrate creates the tables if they do not exist, then checks the key
// columns (CheckKeys). DDL commits implicitly in MySQL, so this is no
// transaction: each statement is idempotent (IF NOT EXISTS), and a named
// lock (GET_LOCK) makes concurrent starts take turns.
func (s *Store) Migrate(ctx context.Context) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	lock := "txinbox.as4.migrate." + s.t.Prefix
	var got sql.NullInt64
	if err := c.QueryRowContext(ctx, `SELECT GET_LOCK(CONCAT(?, DATABASE()), 60)`, lock).Scan(&got); err != nil {
		return err
	}
	if got.Int64 != 1 {
		return fmt.Errorf("as4my: Migrate: another migration held the lock %q for 60 s", lock)
	}
	defer c.ExecContext(context.WithoutCancel(ctx), `SELECT RELEASE_LOCK(CONCAT(?, DATABASE()))`, lock) //nolint:errcheck // the connection's close frees it too
	for _, stmt := range statementEnd.Split(s.t.Expand(migration), -1) {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := c.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("as4my: migration 001_as4: %w", err)
		}
	}
	return s.CheckKeys(ctx)
}

// Save stores m in tx, replacing the rows of an earlier message with the
// same key (left behind when only the inbox row was purged; its payloads
// go with it, ON DELETE CASCADE).
func (s *Store) Save(ctx context.Context, tx *sql.Tx, m *as4.Received) error {
	if _, err := tx.ExecContext(ctx, s.t.Expand(`DELETE FROM {messages} WHERE scope = ? AND message_key = ?`), m.Scope, m.Key); err != nil {
		return err
	}
	r, err := tx.ExecContext(ctx, s.t.Expand(`INSERT INTO {messages} (`+as4sql.MessageColumns+`) VALUES (`+as4sql.Marks(20)+`)`),
		as4sql.MessageArgs(m, mysqlstore.FormatTime(m.ReceivedAt))...)
	if err != nil {
		return err
	}
	id, err := r.LastInsertId()
	if err != nil {
		return err
	}
	// One statement per payload: a statement is bounded by the server's
	// max_allowed_packet, so each payload may be as large as that.
	for i := range m.Parts {
		if _, err := tx.ExecContext(ctx, s.t.Expand(`INSERT INTO {payloads} (message_ref, `+as4sql.PartColumns+`) VALUES (`+as4sql.Marks(10)+`)`),
			append([]any{id}, as4sql.PartArgs(m, i)...)...); err != nil {
			return err
		}
	}
	return nil
}

// Receipt returns the receipt stored with the message (scope, key).
func (s *Store) Receipt(ctx context.Context, scope, key string) (as4.StoredReceipt, error) {
	var r as4.StoredReceipt
	err := s.db.QueryRowContext(ctx, s.t.Expand(`SELECT receipt_message_id, receipt_content_type, receipt
		FROM {messages} WHERE scope = ? AND message_key = ?`), scope, key).Scan(&r.MessageID, &r.ContentType, &r.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return r, as4.ErrNotFound
	}
	return r, err
}

// Purge deletes up to limit messages received before before, oldest
// first, with their payloads (ON DELETE CASCADE), in a short READ
// COMMITTED transaction (no gap locks). It returns how many messages it
// deleted. MySQL's DELETE has no SKIP LOCKED: a message a batch holds
// makes the purge wait for it.
func (s *Store) Purge(ctx context.Context, before time.Time, limit int) (int64, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	r, err := tx.ExecContext(ctx, s.t.Expand(`DELETE FROM {messages} WHERE received_at < ? ORDER BY received_at LIMIT ?`),
		mysqlstore.FormatTime(before), limit)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, err
	}
	return n, tx.Commit()
}

// Exists reports whether the AS4 tables were created (by Migrate), so that
// a purge of a database without them leaves them alone.
func (s *Store) Exists(ctx context.Context) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`,
		s.t.Prefix+"as4_messages").Scan(&n)
	return n > 0, err
}

// Expired counts the messages received before before: what Purge would
// delete, for a dry run.
func (s *Store) Expired(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, s.t.Expand(`SELECT count(*) FROM {messages} WHERE received_at < ?`),
		mysqlstore.FormatTime(before)).Scan(&n)
	return n, err
}
