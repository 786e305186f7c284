package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store/internal/pgcore"
)

// The seam of the shared PostgreSQL code (store/internal/pgcore) on pgx:
// pgx takes Go slices as array parameters as they are, and its Rows are
// pgcore.Rows already.

// pgxRunner is what pgx pools, connections and transactions share.
type pgxRunner interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pgxQuerier is a pgcore.Querier on a pgx pool, connection or
// transaction.
type pgxQuerier[R pgxRunner] struct{ r R }

func (q pgxQuerier[R]) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.r.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (q pgxQuerier[R]) Query(ctx context.Context, sql string, args ...any) (pgcore.Rows, error) {
	return q.r.Query(ctx, sql, args...)
}

// onTx is tx as a pgcore.Querier.
func onTx(tx pgx.Tx) pgcore.Querier { return pgxQuerier[pgx.Tx]{tx} }

// pgxDB is a pgcore.DB on a pgx pool.
type pgxDB struct {
	pgxQuerier[*pgxpool.Pool]
}

func (db pgxDB) InTx(ctx context.Context, fn func(pgcore.Querier) error) error {
	return pgx.BeginFunc(ctx, db.r, func(tx pgx.Tx) error { return fn(onTx(tx)) })
}
