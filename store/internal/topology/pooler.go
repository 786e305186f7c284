// Package topology finds what stands between a PostgreSQL store and its
// server: a connection pooler in front (pgstore.Driver.CheckPooler,
// pgdbstore.Driver.CheckPooler).
package topology

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pooling is what CheckPooler found between the store and PostgreSQL.
type Pooling struct {
	// Pooled: a connection pooler (PgBouncer, say) answers the
	// connections: the backend process a connection was told it has at
	// start is not the one that runs its statements.
	Pooled bool
	// Transaction: the pooler gives each transaction of a connection to
	// whichever server connection is free (PgBouncer's pool_mode =
	// transaction), so nothing of a session outlives a transaction.
	Transaction bool
}

// String says what was found, for a start-up line.
func (p Pooling) String() string {
	switch {
	case p.Transaction:
		return "behind a transaction-pooling connection pooler"
	case p.Pooled:
		return "behind a session-pooling connection pooler"
	}
	return "connected to PostgreSQL directly"
}

// PoolerError is CheckPooler's refusal: a setting of the pool that cannot
// work behind a transaction-pooling connection pooler.
type PoolerError struct {
	// Store names the store that refused: "pgstore" or "pgdbstore".
	Store string
	// Setting names the setting and its value, as the URL sets it, e.g.
	// "default_query_exec_mode=cache_statement".
	Setting string
	// Why says what goes wrong with it.
	Why string
	// Fix says what to set instead.
	Fix string
}

// Error names the setting, why it cannot work and the fix.
func (e *PoolerError) Error() string {
	return e.Store + ": behind a transaction-pooling PgBouncer (pool_mode = transaction), " + e.Setting +
		" cannot work: " + e.Why + ": " + e.Fix
}

// trackedParams are the startup parameters PgBouncer keeps for each
// client in transaction pooling: it sets them again on whichever server
// connection runs the client's next transaction. Any other one is refused
// at connect, or dropped (ignore_startup_parameters).
var trackedParams = map[string]bool{"application_name": true, "client_encoding": true, "datestyle": true,
	"timezone": true, "standard_conforming_strings": true}

// Check finds out whether a connection pooler stands between pool and
// PostgreSQL and, if it pools transactions, refuses with a *PoolerError
// the pool settings that cannot work there (pgstore.Driver.CheckPooler
// says which and why); store names the store asking, in the error.
func Check(ctx context.Context, pool *pgxpool.Pool, store string) (Pooling, error) {
	p, err := detect(ctx, pool)
	if err != nil || !p.Transaction {
		return p, err
	}
	return p, Refuse(pool.Config().ConnConfig, store)
}

// Refuse returns the *PoolerError of a setting of cfg that cannot work
// behind a transaction pooler (Check says which), nil if none; store
// ("pgstore", "pgdbstore") names the store asking, in the error and in
// the fix that names its Options.Schema.
func Refuse(cfg *pgx.ConnConfig, store string) error {
	switch cfg.DefaultQueryExecMode {
	case pgx.QueryExecModeCacheStatement:
		return &PoolerError{Store: store, Setting: "default_query_exec_mode=cache_statement (pgx's default)",
			Why: "its prepared statements live on one server connection and the next transaction runs on another " +
				"(prepared statement \"stmtcache_...\" does not exist, SQLSTATE 26000; PgBouncer 1.18 keeps no prepared statement)",
			Fix: "use cache_describe or exec (add default_query_exec_mode=cache_describe to the URL)"}
	case pgx.QueryExecModeDescribeExec:
		return &PoolerError{Store: store, Setting: "default_query_exec_mode=describe_exec",
			Why: "it describes a statement and executes it in two round trips, which the pooler may send to two server " +
				"connections (another client's statement of the same name runs instead)",
			Fix: "use cache_describe or exec (default_query_exec_mode=cache_describe in the URL)"}
	}
	// In name order: the setting named (and its fix) is the same each run.
	for _, name := range slices.Sorted(maps.Keys(cfg.RuntimeParams)) {
		value := cfg.RuntimeParams[name]
		if trackedParams[strings.ToLower(name)] {
			continue
		}
		fix := "leave it out of the URL and set it with SET LOCAL in each transaction, or for the role: ALTER ROLE <role> SET " + name + " = ..."
		if strings.EqualFold(name, "search_path") {
			fix = "leave it out and name the inbox's schema with " + store + ".Options.Schema (txinbox --schema)"
		}
		return &PoolerError{Store: store, Setting: fmt.Sprintf("the startup parameter %s=%s", name, value),
			Why: "the pooler does not set it on the server connection each transaction runs on (PgBouncer refuses it at connect: " +
				"unsupported startup parameter, or drops it when ignore_startup_parameters lists it)", Fix: fix}
	}
	return nil
}

// Conn is a connection detect asks.
type Conn interface {
	// StartPID is the backend process id the connection was given at
	// start; ok is false when its driver does not tell.
	StartPID() (pid uint32, ok bool)
	// BackendPID asks the backend process id answering the connection.
	BackendPID(ctx context.Context) (uint32, error)
	// BeginPID begins a transaction and returns its backend process id.
	BeginPID(ctx context.Context) (uint32, error)
}

// detect is Detect on a pgx pool.
func detect(ctx context.Context, pool *pgxpool.Pool) (Pooling, error) {
	c1, err := pool.Acquire(ctx)
	if err != nil {
		return Pooling{}, err
	}
	defer c1.Release()
	return Detect(ctx, pgxConn{c1.Conn()}, func(ctx context.Context) (Conn, func(), error) {
		c2, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
		if err != nil {
			return nil, nil, err
		}
		return pgxConn{c2}, func() { c2.Close(context.WithoutCancel(ctx)) }, nil //nolint:errcheck // a probe's connection
	})
}

// Detect compares the backend process c1 was given at start with the one
// answering; behind a pooler (or when c1's driver does not tell) it then
// tells a session pool (each client keeps its server connection) from a
// transaction pool (a server connection serves another client between
// two transactions), with a second connection that second opens (and
// whose close function closes).
func Detect(ctx context.Context, c1 Conn, second func(context.Context) (Conn, func(), error)) (Pooling, error) {
	first, err := c1.BackendPID(ctx)
	if err != nil {
		return Pooling{}, err
	}
	start, known := c1.StartPID()
	if known && first == start {
		return Pooling{}, nil
	}
	pooled := known // without the start's PID, only a transaction pool is told
	c2, closeC2, err := second(ctx)
	if err != nil {
		return Pooling{Pooled: pooled}, err
	}
	defer closeC2()
	// c1's server connection is free now, unless the pooler keeps it
	// for c1 (session pooling); c2 holds a transaction, so that c1's
	// next statement needs another one if c2 took c1's. A session pool
	// whose server connections are all taken makes c2 wait (until
	// PgBouncer's query_wait_timeout); a transaction pool has c1's free:
	// a wait of secondWait is a session pool.
	wctx, cancel := context.WithTimeout(ctx, secondWait)
	defer cancel()
	secondPID, err := c2.BeginPID(wctx)
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		return Pooling{Pooled: pooled}, nil
	}
	if err != nil {
		return Pooling{Pooled: pooled}, err
	}
	again, err := c1.BackendPID(ctx)
	if err != nil {
		return Pooling{Pooled: pooled}, err
	}
	tx := secondPID == first || again != first
	return Pooling{Pooled: pooled || tx, Transaction: tx}, nil
}

// pgxConn is a Conn on pgx.
type pgxConn struct{ c *pgx.Conn }

func (p pgxConn) StartPID() (uint32, bool) { return p.c.PgConn().PID(), true }

func (p pgxConn) BackendPID(ctx context.Context) (uint32, error) { return backendPID(ctx, p.c) }

func (p pgxConn) BeginPID(ctx context.Context) (uint32, error) { return beginPID(ctx, p.c) }

// secondWait is how long detect waits for a server connection for its
// second client.
const secondWait = 5 * time.Second

// beginPID begins a transaction on c and returns its backend process id.
func beginPID(ctx context.Context, c *pgx.Conn) (uint32, error) {
	if _, err := c.Exec(ctx, "BEGIN", pgx.QueryExecModeSimpleProtocol); err != nil {
		return 0, err
	}
	return backendPID(ctx, c)
}

// backendPID is the backend process id answering c, asked in the simple
// protocol (no prepared statement: it works in any pooling mode).
func backendPID(ctx context.Context, c *pgx.Conn) (uint32, error) {
	var pid uint32
	err := c.QueryRow(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pid)
	return pid, err
}
