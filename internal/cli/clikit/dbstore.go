package clikit

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/txinbox/txinbox/store/pgdbstore"
)

// The PostgreSQL store a --db URL selects, with parameters of the URL
// that the binary reads and removes before the driver sees the URL:
//
//	txinbox_store=pgx            pgstore (the default)
//	txinbox_store=database/sql   pgdbstore, on pgx's stdlib
//	txinbox_driver=pgx           pgdbstore's database/sql driver (the only one built in)
//	txinbox_readonly_guard=off   pgdbstore.Options.NoReadOnlyGuard (behind a transaction pooler)
//
// They are URL parameters, not flags, so that one --db (or TXINBOX_DB,
// or the config file's db) says everything about the database for every
// command, and the demo's children and the serve's relay get it as it is.
const (
	storeParam  = "txinbox_store"
	driverParam = "txinbox_driver"
	guardParam  = "txinbox_readonly_guard"
)

// pgChoice is what the txinbox_* parameters of a --db URL chose.
type pgChoice struct {
	// sql selects pgdbstore (database/sql) instead of pgstore.
	sql bool
	// noGuard is pgdbstore.Options.NoReadOnlyGuard.
	noGuard bool
}

// storeNames maps txinbox_store's values to whether they select
// database/sql.
var storeNames = map[string]bool{"pgx": false, "pgstore": false, "database/sql": true, "pgdbstore": true}

// choosePG reads and removes the txinbox_* parameters of a PostgreSQL
// --db; rest is the URL the driver gets.
func choosePG(dsn string) (c pgChoice, rest string, err error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		if strings.Contains(dsn, "txinbox_") {
			return c, dsn, fmt.Errorf("--db: the txinbox_* parameters (%s, %s, %s) are read from a postgres:// URL only, "+
				"not from a key=value connection string", storeParam, driverParam, guardParam)
		}
		return c, dsn, nil
	}
	u, err := url.Parse(dsn)
	if err != nil || !strings.Contains(u.RawQuery, "txinbox_") {
		return c, dsn, nil // pgx reports a URL it cannot parse
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "txinbox_") && k != storeParam && k != driverParam && k != guardParam {
			return c, dsn, fmt.Errorf("--db: unknown parameter %s (known: %s, %s, %s)", k, storeParam, driverParam, guardParam)
		}
	}
	if err := c.read(q); err != nil {
		return c, dsn, fmt.Errorf("--db: %w", err)
	}
	q.Del(storeParam)
	q.Del(driverParam)
	q.Del(guardParam)
	u.RawQuery = q.Encode()
	return c, u.String(), nil
}

// read reads the choice from the URL's parameters.
func (c *pgChoice) read(q url.Values) error {
	one := func(k string) (string, bool, error) {
		vs, ok := q[k]
		if len(vs) > 1 {
			return "", ok, fmt.Errorf("%s is given %d times", k, len(vs))
		}
		if !ok {
			return "", false, nil
		}
		return vs[0], true, nil
	}
	s, given, err := one(storeParam)
	if err != nil {
		return err
	}
	if given {
		sql, ok := storeNames[s]
		if !ok {
			return fmt.Errorf("%s=%q: not a store (pgx: pgstore, the default; database/sql: pgdbstore)", storeParam, s)
		}
		c.sql = sql
	}
	if err := c.readDriver(one); err != nil {
		return err
	}
	g, given, err := one(guardParam)
	switch {
	case err != nil:
		return err
	case given && g != "on" && g != "off":
		return fmt.Errorf("%s=%q: on or off", guardParam, g)
	case given && !c.sql:
		return fmt.Errorf("%s applies to %s=database/sql only (pgstore has no read-only guard: it needs none)", guardParam, storeParam)
	}
	c.noGuard = g == "off"
	return nil
}

// readDriver reads txinbox_driver.
func (c *pgChoice) readDriver(one func(string) (string, bool, error)) error {
	d, given, err := one(driverParam)
	switch {
	case err != nil || !given:
		return err
	case !c.sql:
		return fmt.Errorf("%s applies to %s=database/sql only", driverParam, storeParam)
	case d == "pgx":
		return nil
	case d == "pq" || d == "lib/pq" || d == "postgres":
		return fmt.Errorf("%s=%s: lib/pq is not built into the txinbox binary (it stays out of the library's go.mod); "+
			"the binary's database/sql store runs on pgx's stdlib (%s=pgx), on the same database and tables: "+
			"use lib/pq from your own program with pgdbstore", driverParam, d, driverParam)
	}
	return fmt.Errorf("%s=%q: not a database/sql driver of the binary's (pgx)", driverParam, d)
}

// openSQLPG opens pgdbstore on cfg (parsed by pgxpool.ParseConfig, so
// pool_max_conns is read as the pool's size) with pgx's stdlib.
func openSQLPG(ctx context.Context, f DBFlags, cfg *pgxpool.Config, c pgChoice, maxConns int32) (*InboxDB, error) {
	db := stdlib.OpenDB(*cfg.ConnConfig)
	db.SetMaxOpenConns(int(cfg.MaxConns))
	if maxConns > 0 && !strings.Contains(f.URL, "pool_max_conns") {
		db.SetMaxOpenConns(int(maxConns))
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	where := Redact(cfg) + " (" + storeParam + "=database/sql)"
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, ConnectError{fmt.Errorf("connecting to %s: %w", where, err)}
	}
	d, err := pgdbstore.New(db, pgdbstore.Options{Schema: f.Schema, TablePrefix: f.Prefix, NoReadOnlyGuard: c.noGuard})
	if err == nil {
		_, err = d.CheckPooler(pctx)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return &InboxDB{Kind: "postgres", Where: where, Admin: d, SQLPG: d, SQL: d, sqlDB: db, Close: func() { db.Close() }}, nil
}
