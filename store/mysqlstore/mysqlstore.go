// Package mysqlstore is the MySQL and MariaDB store of txinbox, over
// database/sql and github.com/go-sql-driver/mysql: handlers receive a
// *sql.Tx, so that the business writes of a service on GORM, sqlx, ent,
// Bun or plain database/sql go into the inbox's transaction.
//
//	db, _ := mysqlstore.Open("user:pass@tcp(127.0.0.1:3306)/app") // or mysql://user:pass@host:3306/app
//	driver, _ := mysqlstore.New(db, mysqlstore.Options{})
//	_ = driver.Migrate(ctx)
//	p, _ := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{Scope: "billing", Handler: ...})
//
// The *sql.DB must come from Open, or from sql.OpenDB(Connector(cfg)):
// its connections run each batch as an XA transaction, the commit guard
// (conn.go), which the server refuses to end by COMMIT, ROLLBACK or an
// implicit commit. Tested on MariaDB 10.11; written for MySQL 8.0 too
// (the SQL keeps to what both accept), not tested there: see
// docs/mysqlstore.md.
package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

// Options configures a Driver.
type Options struct {
	// TablePrefix is prepended to every table name. Defaults to
	// "txinbox_". The tables live in the connection's database.
	TablePrefix string
	// Isolation is the batch transaction's isolation level: READ
	// COMMITTED (sql.LevelReadCommitted) or REPEATABLE READ
	// (sql.LevelRepeatableRead). Defaults to READ COMMITTED, which takes
	// no gap locks (docs/mysqlstore.md says why, with the measurements).
	Isolation sql.IsolationLevel
}

// Driver is a store.Driver[*sql.Tx] on a MySQL or MariaDB database.
type Driver struct {
	db   *sql.DB
	t    schema.Tables
	opts Options
	// claims caches the claim's statements.
	claims claimSQLs
}

var (
	_ store.Driver[*sql.Tx] = (*Driver)(nil)
	_ store.Admin           = (*Driver)(nil)
	_ store.Refuser         = (*Driver)(nil)
	_ store.Pinger          = (*Driver)(nil)
	_ store.Purger          = (*Driver)(nil)
	_ store.GaugeReader     = (*Driver)(nil)
	_ store.Timeline        = (*Driver)(nil)
)

// Open opens a MySQL or MariaDB database with txinbox's connections
// (Connector) from a URL, mysql://user:pass@host:port/db?param=value, or
// go-sql-driver's DSN, user:pass@tcp(host:port)/db?param=value. Unless
// the DSN says otherwise, parameters are interpolated on the client
// (interpolateParams=true: one round trip per statement instead of a
// prepare, an execute and a close).
func Open(dsn string) (*sql.DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	c, err := Connector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// ParseDSN reads a mysql:// URL or a go-sql-driver DSN into its
// configuration, with interpolateParams on unless the DSN sets it.
func ParseDSN(dsn string) (*mysql.Config, error) {
	if strings.HasPrefix(dsn, "mysql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, fmt.Errorf("mysqlstore: %w", err)
		}
		c := mysql.NewConfig()
		c.Net, c.Addr, c.DBName = "tcp", u.Host, strings.TrimPrefix(u.Path, "/")
		if u.Port() == "" {
			c.Addr += ":3306"
		}
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
		dsn = c.FormatDSN()
		if u.RawQuery != "" {
			sep := "?"
			if strings.Contains(dsn, "?") {
				sep = "&"
			}
			dsn += sep + u.RawQuery
		}
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: %w", err)
	}
	if !strings.Contains(dsn, "interpolateParams=") {
		cfg.InterpolateParams = true
	}
	return cfg, nil
}

// Redact is the mysql:// URL of cfg without its password.
func Redact(cfg *mysql.Config) string {
	return fmt.Sprintf("mysql://%s@%s/%s", cfg.User, cfg.Addr, cfg.DBName)
}

// New returns a Driver on db, opened by Open or with sql.OpenDB on a
// Connector. TablePrefix must be a plain identifier (lower-case letters,
// digits, underscores).
func New(db *sql.DB, opts Options) (*Driver, error) {
	if db == nil {
		return nil, errors.New("mysqlstore: New: db is nil")
	}
	if _, ok := db.Driver().(guardDriver); !ok {
		return nil, fmt.Errorf("mysqlstore: New: the *sql.DB's driver %T has no commit guard: open the database with "+
			"mysqlstore.Open, sql.OpenDB(mysqlstore.Connector(cfg)) or sql.Open(%q, dsn)", db.Driver(), DriverName)
	}
	if opts.TablePrefix == "" {
		opts.TablePrefix = "txinbox_"
	}
	if err := schema.ValidateIdent("mysqlstore: Options.TablePrefix", opts.TablePrefix, false); err != nil {
		return nil, err
	}
	switch opts.Isolation {
	case sql.LevelDefault:
		opts.Isolation = sql.LevelReadCommitted
	case sql.LevelReadCommitted, sql.LevelRepeatableRead:
	default:
		return nil, fmt.Errorf("mysqlstore: Options.Isolation %s: use READ COMMITTED or REPEATABLE READ", opts.Isolation)
	}
	return &Driver{db: db, t: NewTables(opts.TablePrefix), opts: opts}, nil
}

// NewTables are the table names of prefix, quoted for MySQL (backticks).
func NewTables(prefix string) schema.Tables {
	q := func(name string) string { return "`" + prefix + name + "`" }
	return schema.Tables{
		Prefix: prefix, Inbox: q("inbox"), Attempts: q("attempts"), DeadLetters: q("dead_letters"),
		Drift: q("drift"), Checkpoints: q("checkpoints"), Audit: q("audit"), Outbox: q("outbox"), Migrations: q("schema_migrations"),
	}
}

// DB returns the driver's database handle.
func (d *Driver) DB() *sql.DB { return d.db }

// Tables returns the quoted table names, for operators' SQL.
func (d *Driver) Tables() schema.Tables { return d.t }

// Ping implements store.Pinger: one round trip on a pooled connection.
func (d *Driver) Ping(ctx context.Context) error { return d.db.PingContext(ctx) }

// errorNumber is the MySQL error number in err's chain, 0 if none.
func errorNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// IsTransient reports a deadlock (1213), a lock wait timeout (1205), an
// XA transaction the server rolled back for either, claim races and a
// connection found dead before anything was sent: the batch may simply
// be run again.
func (d *Driver) IsTransient(err error) bool {
	if errors.Is(err, store.ErrClaimRace) || errors.Is(err, driver.ErrBadConn) {
		return true
	}
	switch errorNumber(err) {
	case erLockWaitTimeout, erLockDeadlock, erXARBDeadlock, erXARBTimeout:
		return true
	}
	return false
}

// IsRefused reports the errors by which the database refuses a value or
// a constraint: a duplicate key (1062), a foreign key (1451, 1452), a
// NULL (1048), a value too long or out of range or wrong (1264, 1265,
// 1292, 1366, 1406), a CHECK constraint (3819, 4025), a trigger's
// SIGNAL (1644): tied to some message of the batch.
func (d *Driver) IsRefused(err error) bool {
	switch errorNumber(err) {
	case 1062, 1451, 1452, 1048, 1264, 1265, 1292, 1366, 1406, 3819, 4025, 1644:
		return true
	}
	return false
}

// timeLayout is how the store writes DATETIME(6) values: UTC text, so
// that neither the driver's loc nor the session's time_zone moves them.
const timeLayout = "2006-01-02 15:04:05.000000"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// FormatTime is t as the store writes a DATETIME(6) value: UTC text, for
// the tables of other packages on the same database (outbox/outboxmy).
func FormatTime(t time.Time) string { return formatTime(t) }

// ScanTime scans a DATETIME(6) column into *t (NULL leaves it zero),
// whether go-sql-driver parses times (parseTime=true) or not.
func ScanTime(t *time.Time) sql.Scanner { return at(t) }

// dbTime scans a DATETIME(6) column as go-sql-driver returns it: a
// time.Time with parseTime=true (in loc, which Connector requires to be
// UTC), text without.
type dbTime struct {
	t     *time.Time
	valid bool
}

func (s *dbTime) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		s.valid = false
		return nil
	case time.Time:
		*s.t, s.valid = v.UTC(), true
		return nil
	case []byte:
		return s.parse(string(v))
	case string:
		return s.parse(v)
	}
	return fmt.Errorf("mysqlstore: cannot scan %T as a time", v)
}

func (s *dbTime) parse(text string) error {
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999", text, time.UTC)
	if err != nil {
		return fmt.Errorf("mysqlstore: time %q: %w", text, err)
	}
	*s.t, s.valid = t, true
	return nil
}

// at scans into *t.
func at(t *time.Time) *dbTime { return &dbTime{t: t} }
