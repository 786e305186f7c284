package pgstore

import (
	"context"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
	"github.com/txinbox/txinbox/store/internal/topology"
)

// The database's topology: the durability settings and a pooler in front.

// Pooling is what CheckPooler found between the store and PostgreSQL:
// Pooled (a connection pooler such as PgBouncer answers the connections)
// and Transaction (it gives each transaction to whichever server
// connection is free: PgBouncer's pool_mode = transaction).
type Pooling = topology.Pooling

// PoolerError is CheckPooler's refusal: a setting of the pool (Setting)
// that cannot work behind a transaction-pooling connection pooler, why
// (Why) and what to set instead (Fix).
type PoolerError = topology.PoolerError

// CheckPooler finds out whether a connection pooler stands between the
// pool and PostgreSQL and, if it pools transactions, refuses with a
// *PoolerError the pool settings that cannot work there: pgx's query exec
// modes cache_statement (pgx's default: its prepared statements live on
// one server connection, and the next transaction runs on another) and
// describe_exec (it describes and executes a statement in two round trips,
// which the pooler may send to two server connections), and a startup
// parameter the pooler does not carry from one server connection to the
// next (search_path: use Options.Schema). Migrate calls it first; txinbox
// serve, demo and the other commands call it when they connect.
//
// It opens one connection of its own, closed before it returns. Handlers
// must use no more of a session than txinbox does (docs/operations.md,
// "Behind PgBouncer").
func (d *Driver) CheckPooler(ctx context.Context) (Pooling, error) {
	return topology.Check(ctx, d.pool, "pgstore")
}

var _ store.DurabilityReader = (*Driver)(nil)

// Durability implements store.DurabilityReader. It reads fsync,
// full_page_writes, synchronous_commit (its effective value on a store
// connection: postgresql.conf, ALTER DATABASE and ALTER ROLE defaults
// included), synchronous_standby_names, wal_writer_delay and the standbys
// of pg_stat_replication. A role that is neither a superuser nor a member
// of pg_read_all_stats (pg_monitor) sees the standbys but not how they
// replicate: that is reported in Unread.
func (d *Driver) Durability(ctx context.Context) (store.Durability, error) {
	return pgcore.ReadDurability(ctx, d.core)
}

// Migrate applies the embedded migrations that are not applied yet (see
// pgcore's Migrate: a transaction-scoped advisory lock makes two processes
// take turns). It calls CheckPooler first: a pool that cannot work behind
// the transaction pooler it finds is refused before anything changes.
func (d *Driver) Migrate(ctx context.Context) error {
	if _, err := d.CheckPooler(ctx); err != nil {
		return err
	}
	return d.core.Migrate(ctx)
}
