package sourcetest

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// outageDown is how long the database stays unreachable in
// testDatabaseOutage: longer than the processor waits for it to answer
// after a handler lost its connection.
const outageDown = 7 * time.Second

// testDatabaseOutage loses the consumer's database twice while a handler
// runs, through no fault of any message, with MaxAttempts 1 (one counted
// attempt dead-letters): first every session of the consumer is
// terminated while the database stays up (an operator, a failover), then
// the database is unreachable for outageDown. Nothing is dead-lettered and
// every message takes effect exactly once.
func testDatabaseOutage(f *fixture) {
	app := "sourcetest-outage-" + f.schema
	proxy := f.proxiedInbox(app)
	msgs, ids := messages("out", 40)
	f.publish(msgs...)
	var killed, cut sync.Once
	inbox := f.inbox(nil)
	inbox.MaxAttempts = 1
	inbox.Handler = func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		if err := insertEffect(ctx, tx, m); err != nil {
			return err
		}
		switch m.ID {
		case ids[10]:
			killed.Do(func() { f.terminateSessions(app) })
		case ids[25]:
			cut.Do(func() {
				proxy.SetDown(true)
				time.AfterFunc(outageDown, func() { proxy.SetDown(false) })
			})
		default:
			return nil
		}
		_, err := tx.Exec(ctx, `SELECT 1`)
		return err
	}
	f.drain(inbox, len(ids), nil)
	f.wantExactlyOnce(ids)
	for _, id := range ids {
		if got := f.seen.of(id); slices.Contains(got, txinbox.DeadLettered) {
			f.t.Errorf("%s: %s had outcomes %v", f.h.Name, id, got)
		}
	}
	dls, err := f.driver.ListDeadLetters(context.Background(), store.ListFilter{Scope: scope})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, dl := range dls {
		f.t.Errorf("%s: %s dead-lettered after an outage: %s", f.h.Name, dl.MessageID, dl.LastError)
	}
}

// proxiedInbox points the fixture's driver at a pool whose connections
// (application_name app) pass through a proxy, and returns the proxy.
func (f *fixture) proxiedInbox(app string) *Proxy {
	f.t.Helper()
	u := f.url
	if u == "" {
		u = testdb.URL()
	}
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		f.t.Fatal(err)
	}
	proxy := NewProxy(f.t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	host, port, _ := net.SplitHostPort(proxy.Addr())
	p, _ := strconv.ParseUint(port, 10, 16)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
	cfg.ConnConfig.ConnectTimeout = time.Second
	cfg.ConnConfig.Fallbacks = nil
	if f.schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = f.schema
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(pool.Close)
	if f.driver, err = pgstore.New(pool, pgstore.Options{}); err != nil {
		f.t.Fatal(err)
	}
	return proxy
}

// terminateSessions ends every session named app, through the fixture's
// own pool.
func (f *fixture) terminateSessions(app string) {
	var n int
	err := f.pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n)
	if err != nil || n == 0 {
		f.t.Errorf("terminating the sessions of %s: %d ended, %v", app, n, err)
	}
}
