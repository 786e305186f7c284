package sourcetest

import (
	"context"
	"database/sql"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// pgdbDatabase is the inbox on store/pgdbstore (database/sql on pgx's
// stdlib) in a schema of its own on the test database; the effects are
// read, and sessions ended, through pgDatabase's pool.
type pgdbDatabase struct {
	*pgDatabase
	db *pgdbstore.Driver
}

func newPgDBDatabase(t *testing.T) *pgdbDatabase {
	t.Helper()
	pg := newPgDatabase(t, "")
	db := pgdbtest.Open(t, "pgx", pg.schema, 8)
	d, err := pgdbstore.New(db, pgdbstore.Options{Schema: pg.schema})
	if err != nil {
		t.Fatal(err)
	}
	return &pgdbDatabase{pgDatabase: pg, db: d}
}

func openPgDBChild(ctx context.Context, c childDB) (*pgdbDatabase, error) {
	pg, err := openPgChild(ctx, c)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("pgx", pgdbtest.URL(c.Schema))
	if err != nil {
		return nil, err
	}
	d, err := pgdbstore.New(db, pgdbstore.Options{Schema: c.Schema})
	return &pgdbDatabase{pgDatabase: pg, db: d}, err
}

func (p *pgdbDatabase) processor(s settings) (source.Processor, error) {
	return newProcessor(p.db, configOf(s, func(tx *sql.Tx) txn { return sqlTx{tx, `INSERT INTO effects (message_id) VALUES ($1)`} }))
}

func (p *pgdbDatabase) deadLetters(ctx context.Context, scope string) ([]store.DeadLetterRecord, error) {
	return p.db.ListDeadLetters(ctx, store.ListFilter{Scope: scope})
}

func (p *pgdbDatabase) child() childDB { return childDB{Store: PgDBStore, Schema: p.schema} }

// proxied points the driver at a *sql.DB on pgx's stdlib whose
// connections (application_name app) pass through a proxy.
func (p *pgdbDatabase) proxied(t *testing.T, app string) *Proxy {
	t.Helper()
	cfg, err := pgx.ParseConfig(pgdbtest.URL(p.schema))
	if err != nil {
		t.Fatal(err)
	}
	proxy := NewProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	host, port, _ := net.SplitHostPort(proxy.Addr())
	n, _ := strconv.ParseUint(port, 10, 16)
	cfg.Host, cfg.Port, cfg.ConnectTimeout, cfg.Fallbacks = host, uint16(n), time.Second, nil
	cfg.RuntimeParams["application_name"] = app
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { db.Close() })
	if p.db, err = pgdbstore.New(db, pgdbstore.Options{Schema: p.schema}); err != nil {
		t.Fatal(err)
	}
	return proxy
}

// pgdbHostileHandlers are PostgreSQL's, through database/sql.
func pgdbHostileHandlers() []hostileHandler { return pgHostileHandlers() }
