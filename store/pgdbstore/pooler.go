package pgdbstore

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store/internal/topology"
)

// Pooling is what CheckPooler found between the store and PostgreSQL
// (pgstore.Pooling, the same type).
type Pooling = topology.Pooling

// PoolerError is CheckPooler's refusal (pgstore.PoolerError, the same
// type): a setting that cannot work behind a transaction-pooling
// connection pooler, why, and what to set instead.
type PoolerError = topology.PoolerError

// CheckPooler finds out, as pgstore.Driver.CheckPooler does, whether a
// connection pooler stands between db and PostgreSQL, with two
// connections of db (*sql.Conn): it compares the backend process each
// transaction runs on. Behind a transaction pooler (PgBouncer's
// pool_mode = transaction) it refuses with a *PoolerError (Store
// "pgdbstore") the pgx settings pgstore.Driver.CheckPooler refuses there
// (on pgx's stdlib), and the read-only guard: its session setting (SET
// default_transaction_read_only before BEGIN) would stay on a server
// connection that the pooler then gives to other clients, whose
// transactions turn read-only. Set Options.NoReadOnlyGuard
// (txinbox_readonly_guard=off in txinbox's URL) there. Migrate calls it
// first; txinbox's commands call it when they connect.
//
// On pgx's stdlib it also knows the backend process each connection was
// given at start, and so tells a session pooler from none; on other
// drivers (lib/pq) Pooled is set only for a transaction pooler. A db
// capped at one connection (SetMaxOpenConns(1)) is not checked.
func (d *Driver) CheckPooler(ctx context.Context) (Pooling, error) {
	if d.db.Stats().MaxOpenConnections == 1 {
		return Pooling{}, nil // no second connection to compare with: not checked
	}
	c1, err := d.db.Conn(ctx)
	if err != nil {
		return Pooling{}, err
	}
	defer c1.Close() //nolint:errcheck // a probe's connection, back to the pool
	p, err := topology.Detect(ctx, &sqlConn{c: c1}, func(ctx context.Context) (topology.Conn, func(), error) {
		c2, err := d.db.Conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		s := &sqlConn{c: c2}
		return s, s.close, nil
	})
	if err == nil && p.Transaction {
		err = refuseConfig(c1)
	}
	if err == nil && p.Transaction && !d.opts.NoReadOnlyGuard {
		err = &PoolerError{Store: "pgdbstore", Setting: "the read-only guard (txinbox_readonly_guard=on, pgdbstore.Options.NoReadOnlyGuard false: the default)",
			Why: "it sets default_transaction_read_only on the session before each batch's BEGIN, and the pooler hands that " +
				"server connection to other clients, whose transactions then run read-only (SQLSTATE 25006)",
			Fix: "turn it off: pgdbstore.Options.NoReadOnlyGuard = true (txinbox_readonly_guard=off in txinbox's URL)"}
	}
	return p, err
}

// refuseConfig is pgstore's refusal of the pgx settings that cannot work
// behind a transaction pooler (default_query_exec_mode=cache_statement,
// pgx's default, or describe_exec; a startup parameter the pooler does
// not carry), on pgx's stdlib; other drivers are not checked.
func refuseConfig(c *sql.Conn) error {
	var err error
	_ = c.Raw(func(dc any) error {
		if pc, is := dc.(interface{ Conn() *pgx.Conn }); is {
			err = topology.Refuse(pc.Conn().Config(), "pgdbstore")
		}
		return nil
	})
	return err
}

// sqlConn is a topology.Conn on a *sql.Conn.
type sqlConn struct {
	c  *sql.Conn
	tx *sql.Tx
}

// StartPID is the backend process id pgx's stdlib was told at connect;
// other drivers do not tell.
func (s *sqlConn) StartPID() (pid uint32, ok bool) {
	_ = s.c.Raw(func(dc any) error {
		if c, is := dc.(interface{ Conn() *pgx.Conn }); is {
			pid, ok = c.Conn().PgConn().PID(), true
		}
		return nil
	})
	return pid, ok
}

// simple is the argument that makes pgx's stdlib send the probe's
// statements in the simple protocol, as pgstore's probe does (no prepared
// statement: the probe works in any exec mode, so that CheckPooler can
// name the mode that does not); none on other drivers.
func (s *sqlConn) simple() []any {
	if _, ok := s.StartPID(); ok {
		return []any{pgx.QueryExecModeSimpleProtocol}
	}
	return nil
}

func (s *sqlConn) BackendPID(ctx context.Context) (uint32, error) {
	var pid uint32
	err := s.c.QueryRowContext(ctx, "SELECT pg_backend_pid()", s.simple()...).Scan(&pid)
	return pid, err
}

func (s *sqlConn) BeginPID(ctx context.Context) (uint32, error) {
	tx, err := s.c.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	s.tx = tx
	var pid uint32
	err = tx.QueryRowContext(ctx, "SELECT pg_backend_pid()", s.simple()...).Scan(&pid)
	return pid, err
}

// close ends the probe's transaction and closes its connection (it does
// not go back to the pool).
func (s *sqlConn) close() {
	if s.tx != nil {
		_ = s.tx.Rollback()
	}
	_ = s.c.Raw(func(any) error { return driver.ErrBadConn })
	_ = s.c.Close()
}

// Migrate applies the embedded migrations that are not applied yet
// (pgstore's, with the same advisory lock). It calls CheckPooler first:
// the read-only guard behind a transaction pooler is refused before
// anything changes.
func (d *Driver) Migrate(ctx context.Context) error {
	if _, err := d.CheckPooler(ctx); err != nil {
		return err
	}
	return d.core.Migrate(ctx)
}
