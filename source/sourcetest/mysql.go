package sourcetest

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// mysqlDatabase is the inbox on store/mysqlstore: a database of its own
// on the server internal/mysqltest reaches.
type mysqlDatabase struct {
	url string
	db  *sql.DB
	// driver is what processors run on (proxied moves it).
	driver *mysqlstore.Driver
}

func newMySQLDatabase(t *testing.T) *mysqlDatabase {
	t.Helper()
	url := mysqltest.NewDatabase(t)
	m := &mysqlDatabase{url: url, db: mysqltest.Open(t, url, 8)}
	if err := m.migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

func openMySQLChild(ctx context.Context, url string) (*mysqlDatabase, error) {
	db, err := mysqlstore.Open(url)
	if err != nil {
		return nil, err
	}
	m := &mysqlDatabase{url: url, db: db}
	return m, m.migrate(ctx)
}

// migrate migrates the inbox and creates the effects table: no unique
// key, ids kept byte for byte.
func (m *mysqlDatabase) migrate(ctx context.Context) error {
	d, err := mysqlstore.New(m.db, mysqlstore.Options{})
	if err != nil {
		return err
	}
	if err := d.Migrate(ctx); err != nil {
		return err
	}
	m.driver = d
	_, err = m.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS effects (seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
		message_id BLOB NOT NULL) ENGINE=InnoDB`)
	return err
}

func (m *mysqlDatabase) processor(s settings) (source.Processor, error) {
	return newProcessor(m.driver, configOf(s, func(tx *sql.Tx) txn { return sqlTx{tx, `INSERT INTO effects (message_id) VALUES (?)`} }))
}

func (m *mysqlDatabase) effects(ctx context.Context) (map[string]int, error) {
	rows, err := m.db.QueryContext(ctx, `SELECT message_id, count(*) FROM effects GROUP BY message_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id []byte
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[string(id)] = n
	}
	return out, rows.Err()
}

func (m *mysqlDatabase) effectOrder(ctx context.Context) ([]string, error) {
	rows, err := m.db.QueryContext(ctx, `SELECT message_id FROM effects ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id []byte
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, string(id))
	}
	return ids, rows.Err()
}

func (m *mysqlDatabase) deadLetters(ctx context.Context, scope string) ([]store.DeadLetterRecord, error) {
	return m.driver.ListDeadLetters(ctx, store.ListFilter{Scope: scope})
}

func (m *mysqlDatabase) child() childDB { return childDB{Store: MySQLStore, URL: m.url} }

// proxied points the database's driver at a *sql.DB of txinbox's
// connections that pass through a proxy. MariaDB has no session name
// visible without performance_schema: terminateSessions ends every
// session of the test's database, so app is not used.
func (m *mysqlDatabase) proxied(t *testing.T, _ string) *Proxy {
	t.Helper()
	cfg, err := mysqlstore.ParseDSN(m.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := NewProxy(t, cfg.Addr)
	cfg.Addr, cfg.Timeout = proxy.Addr(), time.Second
	c, err := mysqlstore.Connector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { db.Close() })
	if m.driver, err = mysqlstore.New(db, mysqlstore.Options{}); err != nil {
		t.Fatal(err)
	}
	return proxy
}

// terminateSessions kills every session on the test's database but the
// one that kills (KILL CONNECTION): the consumer's, and the test's own
// idle ones, which database/sql replaces.
func (m *mysqlDatabase) terminateSessions(t *testing.T, _ string) {
	ctx := context.Background()
	conn, err := m.db.Conn(ctx)
	if err != nil {
		t.Errorf("terminating the sessions: %v", err)
		return
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT ID FROM information_schema.PROCESSLIST
		WHERE DB = DATABASE() AND ID <> CONNECTION_ID()`)
	if err != nil {
		t.Errorf("terminating the sessions: %v", err)
		return
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Errorf("terminating the sessions: %v", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	n := 0
	for _, id := range ids {
		if _, err := conn.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10)); err == nil {
			n++
		}
	}
	if n == 0 {
		t.Errorf("terminating the sessions: none of %v ended (%v)", ids, rows.Err())
	}
}

// sqlTx is a *sql.Tx as a txn.
type sqlTx struct {
	tx *sql.Tx
	// insert is the effect's INSERT, with the driver's placeholder.
	insert string
}

func (t sqlTx) effect(ctx context.Context, id string) error {
	_, err := t.tx.ExecContext(ctx, t.insert, id)
	return err
}

func (t sqlTx) exec(ctx context.Context, query string) error {
	_, err := t.tx.ExecContext(ctx, query)
	return err
}

func (t sqlTx) commit(context.Context) error   { return t.tx.Commit() }
func (t sqlTx) rollback(context.Context) error { return t.tx.Rollback() }

// hostileHandlers on MariaDB, as docs/mysqlstore.md's table says: the
// XA guard refuses COMMIT, ROLLBACK and DDL (the message fails alone), a
// failed statement does not abort the transaction (the message is
// processed), and a deadline or a KILL of its own session loses the
// connection.
func mysqlHostileHandlers() []hostileHandler {
	const refused = "refused by the server (XAER_RMFAIL)"
	return []hostileHandler{
		{name: "SwallowsFailedStatement", processed: true, run: effectThen(execs(`INSERT INTO sourcetest_no_such_table VALUES (1)`))},
		{name: "CallsCommit", reason: "(tx.Commit): refused, the whole batch transaction rolled back", run: effectThen(commits)},
		{name: "CallsRollback", reason: "(tx.Rollback): refused, the whole batch transaction rolled back", run: effectThen(rollsBack)},
		{name: "RunsCOMMIT", reason: `it ran "COMMIT"`, run: effectThen(execs(`COMMIT`))},
		{name: "RunsROLLBACK", reason: `it ran "ROLLBACK"`, run: effectThen(execs(`ROLLBACK`))},
		{name: "RunsDDL", reason: refused, run: effectThen(execs(`CREATE TABLE sourcetest_ddl (id INT)`))},
		{name: "RunsXA", reason: "it ran \"XA END", run: effectThen(execs(`XA END 'x'`))},
		{name: "Panics", reason: "panicked", run: panics},
		// go-sql-driver closes the connection when the deadline expires
		// but sends no KILL QUERY: the server ends the session, rolling
		// its XA transaction back, only once SLEEP returns, and the
		// batch's redelivery waits for its locks until then.
		{name: "OwnDeadline", reason: "deadline", run: effectThenReturn(withDeadline(`SELECT SLEEP(3)`))},
		{name: "OwnDeadlineSwallowed", reason: "connection", run: effectThen(withDeadline(`SELECT SLEEP(3)`))},
		// The server ends the handler's own session (error 1927, which
		// the handler returns) while the database stays up.
		{name: "KillsItsConnection", reason: "Connection was killed", run: effectThenReturn(execs(`KILL CONNECTION CONNECTION_ID()`))},
	}
}
