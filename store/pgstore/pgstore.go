// Package pgstore is the PostgreSQL store of txinbox, on pgx v5. Handlers
// receive a pgx.Tx: the inbox row and the side effect commit together.
//
//	pool, _ := pgxpool.New(ctx, "postgres://...")
//	driver, _ := pgstore.New(pool, pgstore.Options{})
//	_ = driver.Migrate(ctx)
//	p, _ := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{Scope: "billing", Handler: ...})
package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
	"github.com/txinbox/txinbox/store/schema"
)

// Options configures a Driver.
type Options struct {
	// Schema holds the inbox tables; Migrate creates it if missing.
	// Defaults to none: table names are unqualified and resolve through
	// the connection's search_path (usually "public").
	Schema string
	// TablePrefix is prepended to every table name. Defaults to "txinbox_".
	TablePrefix string
	// Partitioned makes the first Migrate create the inbox table
	// partitioned by period (LIST on a period number), so that the purge
	// drops whole partitions instead of deleting rows; duplicates are still
	// caught across partitions (docs/operations.md, "Partitioned inbox").
	// The layout is chosen when the inbox table is created and read back
	// from the database afterwards: drivers opened without this option on
	// a partitioned inbox use it as partitioned. Migrate fails when the
	// option asks for a partitioned inbox and an unpartitioned one already
	// exists. Defaults to false.
	Partitioned bool
	// PartitionPeriod is how long one partition receives new rows before
	// the purge starts the next one; it is stored at the first Migrate
	// (later values are ignored). Rows live between the retention and the
	// retention plus one period, and every claim probes each older live
	// partition (about retention / period + 1 of them), which costs
	// throughput: keep that number small, e.g. 7 days for a 30-day
	// retention (docs/operations.md has measurements). Defaults to 7 days;
	// at least one minute.
	PartitionPeriod time.Duration
}

// core is the code pgstore shares with every PostgreSQL store
// (store/internal/pgcore): the admin, purge and partition methods of
// Driver are its own.
type core = pgcore.Core

// Driver is a store.Driver[pgx.Tx] on a pgx connection pool.
type Driver struct {
	*core
	pool *pgxpool.Pool
	t    schema.Tables
	q    *pgcore.Queries
	opts Options
}

var (
	_ store.Driver[pgx.Tx] = (*Driver)(nil)
	_ store.Admin          = (*Driver)(nil)
	_ store.Refuser        = (*Driver)(nil)
)

// New returns a Driver using pool. Schema and TablePrefix must be plain
// identifiers (lower-case letters, digits, underscores).
func New(pool *pgxpool.Pool, opts Options) (*Driver, error) {
	if pool == nil {
		return nil, errors.New("pgstore: New: pool is nil")
	}
	co := pgcore.Options{Name: "pgstore", Schema: opts.Schema, TablePrefix: opts.TablePrefix,
		Partitioned: opts.Partitioned, PartitionPeriod: opts.PartitionPeriod}
	if err := pgcore.Validate(&co); err != nil {
		return nil, err
	}
	opts.TablePrefix, opts.PartitionPeriod = co.TablePrefix, co.PartitionPeriod
	c := pgcore.New(pgxDB{pgxQuerier[*pgxpool.Pool]{pool}}, co)
	return &Driver{core: c, pool: pool, t: c.Tables(), q: pgcore.QueriesOf(c), opts: opts}, nil
}

// ErrNotPartitioned is returned by the partition methods of a Driver whose
// inbox table is not partitioned.
var ErrNotPartitioned = pgcore.ErrNotPartitioned

// ErrPeriodSwitchBusy is returned by RotatePeriod when batch transactions
// held the period lock longer than the switch may make new batches wait;
// the next call tries again.
var ErrPeriodSwitchBusy = pgcore.ErrPeriodSwitchBusy

// Period describes one period of the partitioned layout.
type Period = pgcore.Period

// Pool returns the driver's pool.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Ping implements store.Pinger: one round trip on a pooled connection,
// or on a connection of its own (closed after) when every connection of
// the pool is taken. Batches whose handlers run for seconds can hold them
// all, and a ping that waited for one would take the database for gone: a
// handler that ended its own session would then fail its batch as an
// outage, again at every delivery. The server refusing that connection
// for want of slots (too_many_connections) is an answer too.
func (d *Driver) Ping(ctx context.Context) error {
	if st := d.pool.Stat(); st.AcquiredConns() < st.MaxConns() {
		return d.pool.Ping(ctx)
	}
	c, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig) // Config is a copy
	if err != nil {
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "53300" {
			return nil
		}
		return err
	}
	defer c.Close(context.WithoutCancel(ctx)) //nolint:errcheck // the ping's answer is what counts
	return c.Ping(ctx)
}

// Begin returns a batch transaction (READ COMMITTED, the default). It
// begins with its first statement: with the claim, in one round trip.
func (d *Driver) Begin(ctx context.Context) (store.Tx[pgx.Tx], error) {
	l, err := pgcore.LayoutOf(ctx, d.core)
	if err != nil {
		return nil, err
	}
	return &pgTx{d: d, pool: d.pool, q: d.q, layout: l}, nil
}

// IsTransient reports deadlocks, serialization failures, claim races and
// errors that pgx says happened before anything reached the server (a dead
// pooled connection after a restart).
func (d *Driver) IsTransient(err error) bool {
	return errors.Is(err, store.ErrClaimRace) || pgconn.SafeToRetry(err) || pgcore.IsTransient(err)
}

// IsRefused reports a data exception (class 22), an integrity constraint
// (23), a program limit (54) or an exception raised by a PL/pgSQL trigger
// (P0): the database refused the work, tied to some message of the batch.
func (d *Driver) IsRefused(err error) bool { return pgcore.IsRefused(err) }
