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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/schema"
	"github.com/txinbox/txinbox/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configures a Driver.
type Options struct {
	// Schema holds the inbox tables; Migrate creates it if missing.
	// Defaults to none: table names are unqualified and resolve through
	// the connection's search_path (usually "public").
	Schema string
	// TablePrefix is prepended to every table name. Defaults to "txinbox_".
	TablePrefix string
}

// Driver is a store.Driver[pgx.Tx] on a pgx connection pool.
type Driver struct {
	pool   *pgxpool.Pool
	schema string
	t      schema.Tables
	q      queries
}

var (
	_ store.Driver[pgx.Tx] = (*Driver)(nil)
	_ store.Admin          = (*Driver)(nil)
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
	t := schema.NewTables(opts.Schema, opts.TablePrefix)
	return &Driver{pool: pool, schema: opts.Schema, t: t, q: newQueries(t)}, nil
}

// Pool returns the driver's pool.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Tables returns the qualified, quoted table names, for operators' SQL.
func (d *Driver) Tables() schema.Tables { return d.t }

// Begin returns a batch transaction (READ COMMITTED, the default). It
// begins with its first statement: with the claim, in one round trip.
func (d *Driver) Begin(ctx context.Context) (store.Tx[pgx.Tx], error) {
	return &pgTx{pool: d.pool, q: &d.q}, nil
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
