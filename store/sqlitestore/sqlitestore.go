// Package sqlitestore is the embedded SQLite store of txinbox, on the pure-Go
// modernc.org/sqlite (no cgo). Handlers receive a *sql.Tx: the inbox row and
// the side effect commit together.
//
// The database runs in WAL mode with synchronous=FULL, and every transaction
// begins IMMEDIATE: SQLite allows one writer at a time, and taking the write
// lock up front (instead of upgrading a read lock later, which fails with
// SQLITE_BUSY) lets several processes share one file safely; they queue on
// the lock for up to Options.BusyTimeout.
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configures a Driver.
type Options struct {
	// TablePrefix is prepended to every table name. Defaults to "txinbox_".
	TablePrefix string
	// BusyTimeout is how long a transaction waits for another process's
	// write lock. Defaults to 30s.
	BusyTimeout time.Duration
	// Synchronous is the PRAGMA synchronous level: "FULL" (durable at
	// every commit) or "NORMAL" (WAL: a power loss may lose the last
	// commits, a process crash loses nothing). Defaults to "FULL".
	Synchronous string
}

// Driver is a store.Driver[*sql.Tx] on a SQLite database file.
type Driver struct {
	db *sql.DB
	t  schema.Tables
	q  queries
	// guards holds the commit guard of each physical connection.
	guards sync.Map
}

var (
	_ store.Driver[*sql.Tx] = (*Driver)(nil)
	_ store.Admin           = (*Driver)(nil)
	_ store.Refuser         = (*Driver)(nil)
)

// Open opens (creating if needed) the SQLite database file at path.
func Open(path string, opts Options) (*Driver, error) {
	if path == "" {
		return nil, errors.New("sqlitestore: Open: empty path")
	}
	if err := schema.ValidateIdent("sqlitestore: Options.TablePrefix", opts.TablePrefix, true); err != nil {
		return nil, err // before the file is created
	}
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = 30 * time.Second
	}
	if opts.Synchronous == "" {
		opts.Synchronous = "FULL"
	}
	sync := strings.ToUpper(opts.Synchronous)
	if sync != "FULL" && sync != "NORMAL" {
		return nil, fmt.Errorf("sqlitestore: invalid Options.Synchronous %q: use FULL or NORMAL", opts.Synchronous)
	}
	v := url.Values{}
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
	v.Add("_pragma", "synchronous("+sync+")")
	v.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+v.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	// One writer at a time is all SQLite allows; a single connection
	// queues writers in Go instead of on the file lock.
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	d, err := New(db, opts)
	if err != nil {
		db.Close()
	}
	return d, err
}

// New returns a Driver on an open database. Open it with _txlock=immediate
// and a busy_timeout (as Open does) when several processes share the file.
//
// db must be a modernc.org/sqlite database (sql.Open("sqlite", ...)): the
// store guards its transactions with that driver's commit hook. Another
// driver is refused here, with an error that says what to use instead (a
// PostgreSQL database is pgstore's, through a pgxpool.Pool), rather than
// failing later in Migrate or Begin.
func New(db *sql.DB, opts Options) (*Driver, error) {
	if db == nil {
		return nil, errors.New("sqlitestore: New: db is nil")
	}
	if err := checkDriver(db); err != nil {
		return nil, err
	}
	if opts.TablePrefix == "" {
		opts.TablePrefix = "txinbox_"
	}
	if err := schema.ValidateIdent("sqlitestore: Options.TablePrefix", opts.TablePrefix, false); err != nil {
		return nil, err
	}
	t := schema.NewTables("", opts.TablePrefix)
	return &Driver{db: db, t: t, q: newQueries(t)}, nil
}

// DB returns the driver's database handle.
func (d *Driver) DB() *sql.DB { return d.db }

// Tables returns the quoted table names, for operators' SQL.
func (d *Driver) Tables() schema.Tables { return d.t }

// Close closes the database.
func (d *Driver) Close() error { return d.db.Close() }

// Begin starts a batch transaction, on a connection of its own with the
// commit guard armed (guard.go).
func (d *Driver) Begin(ctx context.Context) (store.Tx[*sql.Tx], error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	g, err := d.guardOf(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	g.arm()
	return &sqliteTx{conn: conn, tx: tx, g: g, q: &d.q}, nil
}

// IsTransient reports a busy or locked database file and claim races.
func (d *Driver) IsTransient(err error) bool {
	if errors.Is(err, store.ErrClaimRace) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	return false
}

// timeFormat is fixed-width so that text order is time order.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) { return time.Parse(timeFormat, s) }

// IsRefused reports a constraint (a deferred foreign key at COMMIT, a
// trigger's RAISE), a value too big or of the wrong type: the database
// refused the work, tied to some message of the batch. The commit guard's
// own refusal is not one (the processor sees it through Check).
func (d *Driver) IsRefused(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_COMMITHOOK:
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH:
		return true
	}
	return false
}
