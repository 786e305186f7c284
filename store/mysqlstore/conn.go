package mysqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/txinbox/txinbox/store"
)

// The commit guard. MySQL has no deferred trigger and no commit hook, so a
// handler that runs COMMIT as SQL would commit the batch's inbox rows
// with the effects written so far, and the statements it runs next would
// autocommit. txinbox's connections (Connector) run the batch
// transaction as an XA transaction instead: while it is ACTIVE, the
// server itself refuses COMMIT, ROLLBACK, START TRANSACTION, every
// statement that commits implicitly (DDL, LOCK TABLES) and a procedure
// that does any of them, with XAER_RMFAIL (1399), and the transaction
// goes on untouched. The connection notes such a refusal, and every other
// way a handler can break its transaction (the *sql.Tx's Commit or
// Rollback, a statement the server answered by rolling back the whole
// transaction, a connection closed under it), for Check to read without
// a round trip. Only the store's own Commit ends the batch: XA END, then
// XA COMMIT ... ONE PHASE.

// Error numbers of MySQL and MariaDB that the store reads.
const (
	erLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT: the statement (only) is rolled back
	erLockDeadlock    = 1213 // ER_LOCK_DEADLOCK: the whole transaction is rolled back
	erXARMFail        = 1399 // XAER_RMFAIL: refused in the XA transaction's state
	erXANotA          = 1397 // XAER_NOTA: unknown XID
	erXARBRollback    = 1402 // XA_RBROLLBACK: the branch was rolled back
	erXARBTimeout     = 1613 // XA_RBTIMEOUT
	erXARBDeadlock    = 1614 // XA_RBDEADLOCK
	erDupFieldName    = 1060 // ER_DUP_FIELDNAME: ADD COLUMN of a column that exists
)

// Connector returns a driver.Connector of txinbox's MySQL connections
// over go-sql-driver/mysql with cfg: open the *sql.DB that New takes
// with sql.OpenDB(connector), and hand the same *sql.DB to the
// application's own code (GORM, sqlx, ...), whose statements then run
// unchanged. Outside a batch transaction the connections are
// go-sql-driver's own; in one they guard the commit (see conn.go).
//
// cfg.Loc must be UTC (go-sql-driver's default): the store writes and
// reads its times in UTC. cfg.ClientFoundRows must be off (the default):
// the claim counts the rows it inserted by the affected-row count.
func Connector(cfg *mysql.Config) (driver.Connector, error) {
	if cfg.Loc != nil && cfg.Loc.String() != "UTC" {
		return nil, fmt.Errorf("mysqlstore: Connector: the configuration's Loc is %s; the store needs UTC (loc=UTC, the default)", cfg.Loc)
	}
	if cfg.ClientFoundRows {
		return nil, errors.New("mysqlstore: Connector: clientFoundRows counts unchanged rows as affected, and the claim tells " +
			"inserted rows by the affected-row count: leave it off")
	}
	inner, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return &connector{inner: inner, interpolate: cfg.InterpolateParams}, nil
}

// connector makes guarded connections.
type connector struct {
	inner       driver.Connector
	interpolate bool
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{inner: dc.(innerConn), interpolate: c.interpolate}, nil
}

func (c *connector) Driver() driver.Driver { return guardDriver{} }

// guardDriver is the driver of the guarded connections, registered as
// "txinbox-mysql": sql.Open("txinbox-mysql", dsn) takes the driver's DSN.
type guardDriver struct{}

func (guardDriver) Open(dsn string) (driver.Conn, error) {
	c, err := guardDriver{}.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

func (guardDriver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return Connector(cfg)
}

// DriverName is the name the guarded driver is registered under.
const DriverName = "txinbox-mysql"

func init() { sql.Register(DriverName, guardDriver{}) }

// innerConn is what go-sql-driver's connection implements.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// batchKey marks the context of a batch transaction's BeginTx.
type batchKey struct{}

// conn is a guarded connection.
type conn struct {
	inner innerConn
	// xid is the batch transaction's XA id while one is open.
	xid string
	// level is the session's isolation level, mariadb whether the server
	// is MariaDB (probe).
	level   string
	mariadb bool
	// interpolate says that go-sql-driver interpolates the parameters
	// (interpolateParams): no statement is prepared on the server.
	interpolate bool
	// own is set while the store ends the batch (Commit, Rollback).
	own atomic.Bool
	// bad marks a connection whose XA state is unknown: the pool
	// discards it (the server rolls back an ACTIVE XA transaction when
	// its connection closes).
	bad atomic.Bool

	mu sync.Mutex
	// broken is what a handler did to the batch, nil while it is whole.
	broken *store.BrokenTxError
	// locks are the named locks the batch took (reply.go), released
	// when it ends.
	locks []string
}

var xidSeq atomic.Uint64

// newXID is an XA id unique on the server: random, and counted.
func newXID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("txinbox-%s-%d", hex.EncodeToString(b[:]), xidSeq.Add(1))
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.refuseXA(query); err != nil {
		return nil, err
	}
	st, err := c.inner.PrepareContext(ctx, query)
	c.note(query, err)
	if err != nil {
		return nil, err
	}
	return &stmt{inner: st, c: c, query: query}, nil
}

func (c *conn) Close() error { return c.inner.Close() }

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins the application's transactions as go-sql-driver does,
// and a batch transaction (its context carries batchKey) as an XA
// transaction: SET TRANSACTION ISOLATION LEVEL when the session is at
// another level, then XA START.
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if ctx.Value(batchKey{}) == nil {
		return c.inner.BeginTx(ctx, opts)
	}
	session := c.probe(ctx)
	if level, ok := isolationSQL[sql.IsolationLevel(opts.Isolation)]; ok && session != level {
		if _, err := c.inner.ExecContext(ctx, "SET TRANSACTION ISOLATION LEVEL "+level, nil); err != nil {
			return nil, err
		}
	}
	xid := newXID()
	if _, err := c.inner.ExecContext(ctx, "XA START '"+xid+"'", nil); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.xid, c.broken = xid, nil
	c.mu.Unlock()
	c.own.Store(false)
	return &xaTx{c: c}, nil
}

// probe reads, at the connection's first batch, its session isolation
// level ("READ COMMITTED") and whether the server is MariaDB (rowsForm),
// and returns the level: when it is the batch's, the batch saves the
// round trip of SET TRANSACTION (a DSN with tx_isolation or
// transaction_isolation set, or the server's default). A level the
// application changes later on the connection is not seen: the batch
// then runs at it, which changes its locks, not its answers (the claim's
// lookup is a locking read).
func (c *conn) probe(ctx context.Context) string {
	if c.level != "" {
		return c.level
	}
	for _, v := range []string{"@@transaction_isolation", "@@tx_isolation"} {
		rows, err := c.inner.QueryContext(ctx, "SELECT "+v+", VERSION()", nil)
		if err != nil {
			continue
		}
		dest := make([]driver.Value, 2)
		if rows.Next(dest) == nil {
			if b, ok := dest[0].([]byte); ok {
				c.level = strings.ReplaceAll(string(b), "-", " ")
			}
			if b, ok := dest[1].([]byte); ok {
				c.mariadb = strings.Contains(string(b), "MariaDB")
			}
		}
		_ = rows.Close()
		break
	}
	if c.level == "" {
		c.level = "unknown"
	}
	return c.level
}

// rowsForm is how the batch's statements on this connection spell tables
// of rows: MariaDB's VALUES with interpolated parameters, else the union
// that MySQL reads too.
func (c *conn) rowsForm() rowsForm {
	if c.mariadb && c.interpolate && !forceUnion.Load() {
		return valuesForm
	}
	return unionForm
}

// forceUnion makes every connection use the union form (tests: the form
// MySQL gets, run on MariaDB).
var forceUnion atomic.Bool

var isolationSQL = map[sql.IsolationLevel]string{
	sql.LevelReadCommitted:  "READ COMMITTED",
	sql.LevelRepeatableRead: "REPEATABLE READ",
	sql.LevelSerializable:   "SERIALIZABLE",
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.refuseXA(query); err != nil {
		return nil, err
	}
	r, err := c.inner.ExecContext(ctx, query, args)
	c.note(query, err)
	return r, err
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.refuseXA(query); err != nil {
		return nil, err
	}
	r, err := c.inner.QueryContext(ctx, query, args)
	c.note(query, err)
	return r, err
}

func (c *conn) Ping(ctx context.Context) error { return c.inner.Ping(ctx) }

func (c *conn) ResetSession(ctx context.Context) error {
	if c.bad.Load() || c.holdsLocks() {
		return driver.ErrBadConn
	}
	return c.inner.ResetSession(ctx)
}

func (c *conn) IsValid() bool { return !c.bad.Load() && !c.holdsLocks() && c.inner.IsValid() }

func (c *conn) CheckNamedValue(nv *driver.NamedValue) error { return c.inner.CheckNamedValue(nv) }

// inBatch reports whether a batch transaction is open.
func (c *conn) inBatch() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.xid != ""
}

// refuseXA refuses an XA statement of a handler during a batch: XA END
// and XA COMMIT naming the batch's id would commit it past the guard.
func (c *conn) refuseXA(query string) error {
	q := strings.TrimSpace(query)
	if len(q) < 3 || !strings.EqualFold(q[:3], "XA ") || !c.inBatch() {
		return nil
	}
	c.breaks(&store.BrokenTxError{Reason: fmt.Sprintf("it ran %q during the batch transaction (refused: the processor alone ends it)", clip(q))})
	return errors.New("mysqlstore: XA statements are refused in a batch transaction (the processor alone ends it)")
}

// note records what a failed statement of a handler did to the batch
// transaction: a statement that would have ended it (refused by the
// server), or one after which the server rolled the whole transaction
// back.
func (c *conn) note(query string, err error) {
	var me *mysql.MySQLError
	if err == nil || !errors.As(err, &me) || !c.inBatch() || c.own.Load() {
		return
	}
	switch me.Number {
	case erXARMFail:
		c.breaks(&store.BrokenTxError{Reason: fmt.Sprintf("it ran %q, which would end the batch transaction "+
			"(COMMIT or ROLLBACK as SQL, or a statement that commits implicitly: DDL, LOCK TABLES); "+
			"refused by the server (XAER_RMFAIL), the message's work is rolled back", clip(query))})
	case erLockDeadlock, erXARBDeadlock, erXARBTimeout, erXARBRollback:
		c.breaks(&store.BrokenTxError{Lost: true, Aborted: true,
			Reason: fmt.Sprintf("the server rolled back the whole batch transaction after %q failed: %v", clip(query), err)})
	}
}

// breaks notes the first way the batch transaction was broken.
func (c *conn) breaks(b *store.BrokenTxError) {
	c.mu.Lock()
	if c.broken == nil {
		c.broken = b
	}
	c.mu.Unlock()
}

// state returns what broke the batch, and whether the connection is
// closed; no round trip.
func (c *conn) state() (*store.BrokenTxError, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken, !c.inner.IsValid()
}

// end ends the XA transaction: committed (XA END, XA COMMIT ... ONE
// PHASE) or rolled back (XA END, XA ROLLBACK). A connection whose XA
// transaction cannot be ended is marked bad: the pool closes it, and the
// server rolls back what it held.
func (c *conn) end(commit bool) error {
	c.mu.Lock()
	xid := c.xid
	c.xid = ""
	c.mu.Unlock()
	if xid == "" {
		return sql.ErrTxDone
	}
	defer c.releaseLocks()
	ctx := context.Background()
	_, err := c.inner.ExecContext(ctx, "XA END '"+xid+"'", nil)
	if commit {
		if err == nil {
			_, err = c.inner.ExecContext(ctx, "XA COMMIT '"+xid+"' ONE PHASE", nil)
		}
		if err != nil {
			c.rollbackXA(xid)
		}
		return err
	}
	c.rollbackXA(xid)
	return nil
}

// rollbackXA rolls the XA transaction back; when the server does not
// confirm it (nor that it is gone already), the connection is marked bad.
func (c *conn) rollbackXA(xid string) {
	ctx := context.Background()
	_, err := c.inner.ExecContext(ctx, "XA ROLLBACK '"+xid+"'", nil)
	var me *mysql.MySQLError
	if err != nil && !(errors.As(err, &me) && (me.Number == erXANotA || me.Number == erXARBRollback ||
		me.Number == erXARBDeadlock || me.Number == erXARBTimeout)) {
		c.bad.Store(true)
	}
}

// xaTx is a batch transaction's driver.Tx: database/sql calls it when
// the *sql.Tx is committed or rolled back, by the store (own) or by a
// handler.
type xaTx struct{ c *conn }

const handlerEndedTx = "it ended the *sql.Tx it was given (tx.%s): refused, the whole batch transaction rolled back"

func (t *xaTx) Commit() error {
	if t.c.own.Load() {
		return t.c.end(true)
	}
	t.c.breaks(&store.BrokenTxError{Lost: true, Reason: fmt.Sprintf(handlerEndedTx, "Commit")})
	_ = t.c.end(false)
	return store.ErrTxEndByHandler
}

func (t *xaTx) Rollback() error {
	if t.c.own.Load() {
		return t.c.end(false)
	}
	t.c.breaks(&store.BrokenTxError{Lost: true, Reason: fmt.Sprintf(handlerEndedTx, "Rollback")})
	_ = t.c.end(false)
	return store.ErrTxEndByHandler
}

// stmt is a prepared statement of a guarded connection.
type stmt struct {
	inner driver.Stmt
	c     *conn
	query string
}

func (s *stmt) Close() error  { return s.inner.Close() }
func (s *stmt) NumInput() int { return s.inner.NumInput() }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return nil, errors.New("mysqlstore: Stmt.Exec without a context is not supported")
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return nil, errors.New("mysqlstore: Stmt.Query without a context is not supported")
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.inner.(driver.StmtExecContext).ExecContext(ctx, args)
	s.c.note(s.query, err)
	return r, err
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.inner.(driver.StmtQueryContext).QueryContext(ctx, args)
	s.c.note(s.query, err)
	return r, err
}

func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	return s.inner.(driver.NamedValueChecker).CheckNamedValue(nv)
}

// clip is a statement's text cut for an error message.
func clip(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if r := []rune(q); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return q
}

// clearBroken forgets a break that the rollback to the message's
// savepoint undid (a refused COMMIT); a lost transaction stays lost.
func (c *conn) clearBroken() {
	c.mu.Lock()
	if c.broken != nil && !c.broken.Lost {
		c.broken = nil
	}
	c.mu.Unlock()
}
