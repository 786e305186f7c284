package sourcetest

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// pgDatabase is the inbox on store/pgstore: a schema of its own on the
// test database, or a database of its own reached through url.
type pgDatabase struct {
	schema string
	url    string
	pool   *pgxpool.Pool
	// driver is what processors run on (proxied moves it).
	driver *pgstore.Driver
}

func newPgDatabase(t *testing.T, poolerURL string) *pgDatabase {
	t.Helper()
	admin := testdb.Require(t)
	db := &pgDatabase{}
	if poolerURL != "" {
		db.url = testdb.WithDatabase(t, poolerURL, testdb.NewDatabase(t, admin))
		db.pool = openPool(t, db.url)
	} else {
		db.schema = testdb.NewSchema(t, admin)
		db.pool = testdb.PoolIn(t, db.schema, 8)
	}
	if err := db.migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

func openPgChild(ctx context.Context, c childDB) (*pgDatabase, error) {
	url := c.URL
	if url == "" {
		url = testdb.URL()
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if c.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = c.Schema
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	db := &pgDatabase{pool: pool}
	return db, db.migrate(ctx)
}

// openPool opens a pool of 8 connections on url, closed at cleanup.
func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// migrate migrates the inbox in the pool's schema and creates the effects
// table. It has no unique constraint: only the inbox stands between a
// redelivery and a second effect.
func (db *pgDatabase) migrate(ctx context.Context) error {
	d, err := pgstore.New(db.pool, pgstore.Options{})
	if err != nil {
		return err
	}
	if err := d.Migrate(ctx); err != nil {
		return err
	}
	db.driver = d
	_, err = db.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS effects (seq bigserial, message_id text NOT NULL)`)
	return err
}

func (db *pgDatabase) processor(s settings) (source.Processor, error) {
	return newProcessor(db.driver, configOf(s, func(tx pgx.Tx) txn { return pgTx{tx} }))
}

func (db *pgDatabase) effects(ctx context.Context) (map[string]int, error) {
	rows, err := db.pool.Query(ctx, `SELECT message_id, count(*) FROM effects GROUP BY message_id`)
	if err != nil {
		return nil, err
	}
	m := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		m[id] = n
		return nil
	})
	return m, err
}

func (db *pgDatabase) effectOrder(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT message_id FROM effects ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (db *pgDatabase) deadLetters(ctx context.Context, scope string) ([]store.DeadLetterRecord, error) {
	return db.driver.ListDeadLetters(ctx, store.ListFilter{Scope: scope})
}

func (db *pgDatabase) child() childDB { return childDB{Store: PgStore, Schema: db.schema, URL: db.url} }

// proxied points the database's driver at a pool whose connections
// (application_name app) pass through a proxy, and returns the proxy.
func (db *pgDatabase) proxied(t *testing.T, app string) *Proxy {
	t.Helper()
	u := db.url
	if u == "" {
		u = testdb.URL()
	}
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	proxy := NewProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	host, port, _ := net.SplitHostPort(proxy.Addr())
	p, _ := strconv.ParseUint(port, 10, 16)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
	cfg.ConnConfig.ConnectTimeout = time.Second
	cfg.ConnConfig.Fallbacks = nil
	if db.schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = db.schema
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if db.driver, err = pgstore.New(pool, pgstore.Options{}); err != nil {
		t.Fatal(err)
	}
	return proxy
}

// terminateSessions ends every session named app, through the test's own
// pool.
func (db *pgDatabase) terminateSessions(t *testing.T, app string) {
	var n int
	err := db.pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n)
	if err != nil || n == 0 {
		t.Errorf("terminating the sessions of %s: %d ended, %v", app, n, err)
	}
}

// pgTx is a pgx.Tx as a txn.
type pgTx struct{ tx pgx.Tx }

func (t pgTx) effect(ctx context.Context, id string) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO effects (message_id) VALUES ($1)`, id)
	return err
}

func (t pgTx) exec(ctx context.Context, query string) error {
	_, err := t.tx.Exec(ctx, query)
	return err
}

func (t pgTx) commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t pgTx) rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

// hostileHandlers on PostgreSQL: every one breaks the transaction, and
// its message is dead-lettered alone.
func pgHostileHandlers() []hostileHandler {
	return []hostileHandler{
		// PostgreSQL aborts the transaction (SQLSTATE 25P02): the next
		// statement of the batch fails, whoever sends it.
		{name: "SwallowsFailedStatement", reason: "SQLSTATE 25P02", run: effectThen(execs(`INSERT INTO sourcetest_no_such_table VALUES (1)`))},
		{name: "CallsCommit", reason: "tx.Commit", run: effectThen(commits)},
		{name: "CallsRollback", reason: "tx.Rollback", run: effectThen(rollsBack)},
		{name: "RunsCOMMIT", reason: "COMMIT or ROLLBACK as SQL", run: effectThen(execs(`COMMIT`))},
		{name: "RunsROLLBACK", reason: "COMMIT or ROLLBACK as SQL", run: effectThen(execs(`ROLLBACK`))},
		{name: "Panics", reason: "panicked", run: panics},
		// pgx closes the connection when a statement's context expires.
		{name: "OwnDeadline", reason: "deadline", run: effectThenReturn(withDeadline(`SELECT pg_sleep(10)`))},
		// The server ends the handler's own session (as a statement that
		// crashes its backend would) while the database stays up: not an
		// outage, so the message is suspected, then blamed when its
		// handler loses the connection again run alone.
		{name: "TerminatesItsBackend", reason: "closed twice in a row", run: effectThenReturn(execs(`SELECT pg_terminate_backend(pg_backend_pid())`))},
		{name: "OwnDeadlineSwallowed", reason: "connection was closed", run: effectThen(withDeadline(`SELECT pg_sleep(10)`))},
	}
}
