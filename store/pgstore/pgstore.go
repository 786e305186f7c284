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
	"embed"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
	"github.com/txinbox/txinbox/store/schema"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// partitionedFS holds the DDL of the partitioned layout, applied by the
// first Migrate of a driver with Options.Partitioned (see partition.go).
//
//go:embed partitioned/*.sql
var partitionedFS embed.FS

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

// Driver is a store.Driver[pgx.Tx] on a pgx connection pool.
type Driver struct {
	pool   *pgxpool.Pool
	schema string
	t      schema.Tables
	q      queries
	opts   Options
	// periods is the qualified name of the period table of the
	// partitioned layout.
	periods string
	// layout is the detected table layout, nil until known.
	layout atomic.Pointer[layout]
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
	if opts.TablePrefix == "" {
		opts.TablePrefix = "txinbox_"
	}
	if err := schema.ValidateIdent("pgstore: Options.Schema", opts.Schema, true); err != nil {
		return nil, err
	}
	if err := schema.ValidateIdent("pgstore: Options.TablePrefix", opts.TablePrefix, false); err != nil {
		return nil, err
	}
	if opts.PartitionPeriod == 0 {
		opts.PartitionPeriod = 7 * 24 * time.Hour
	}
	if opts.PartitionPeriod < time.Minute {
		return nil, fmt.Errorf("pgstore: Options.PartitionPeriod %s is below the minimum of 1m", opts.PartitionPeriod)
	}
	t := schema.NewTables(opts.Schema, opts.TablePrefix)
	periods := pgsql.Qualify(opts.Schema, opts.TablePrefix+"inbox_periods")
	return &Driver{pool: pool, schema: opts.Schema, t: t, q: newQueries(t, periods), opts: opts, periods: periods}, nil
}

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

// Tables returns the qualified, quoted table names, for operators' SQL.
func (d *Driver) Tables() schema.Tables { return d.t }

// Begin returns a batch transaction (READ COMMITTED, the default). It
// begins with its first statement: with the claim, in one round trip.
func (d *Driver) Begin(ctx context.Context) (store.Tx[pgx.Tx], error) {
	l, err := d.layoutOf(ctx)
	if err != nil {
		return nil, err
	}
	return &pgTx{pool: d.pool, q: &d.q, layout: l}, nil
}

// IsTransient reports deadlocks, serialization failures, claim races and
// errors that pgx says happened before anything reached the server (a dead
// pooled connection after a restart).
func (d *Driver) IsTransient(err error) bool {
	if errors.Is(err, store.ErrClaimRace) || pgconn.SafeToRetry(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	return false
}

// IsRefused reports a data exception (class 22), an integrity constraint
// (23), a program limit (54) or an exception raised by a PL/pgSQL trigger
// (P0): the database refused the work, tied to some message of the batch.
func (d *Driver) IsRefused(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) < 2 {
		return false
	}
	switch pe.Code[:2] {
	case "22", "23", "54", "P0":
		return true
	}
	return false
}
