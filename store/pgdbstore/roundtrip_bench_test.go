package pgdbstore_test

import (
	"context"
	"testing"

	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// BenchmarkRoundTrip measures one statement's round trip through each
// layer, to say where pgdbstore's distance to pgstore goes
// (docs/benchmarks.md): pgx's pool, database/sql on pgx's stdlib (a *sql.DB,
// and a held *sql.Conn as the batch transaction uses), with no argument
// (pgx's simple protocol) and with a text array argument (the extended
// protocol, the argument converted by database/sql and the stdlib).
//
//	go test ./store/pgdbstore -run '^$' -bench RoundTrip -benchtime 3000x
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	schema := testdb.NewSchema(b, testdb.Require(b))
	pool := testdb.PoolIn(b, schema, 1)
	db := pgdbtest.Open(b, "pgx", schema, 1)
	const arr = "SELECT cardinality($1::text[])"
	lit := "{a,b,c,d,e,f,g,h}"
	b.Run("pgx/no-args", func(b *testing.B) {
		for b.Loop() {
			_, err := pool.Exec(ctx, "SELECT 1")
			mustB(b, err)
		}
	})
	b.Run("pgx/array-arg", func(b *testing.B) {
		for b.Loop() {
			_, err := pool.Exec(ctx, arr, []string{"a", "b", "c", "d", "e", "f", "g", "h"})
			mustB(b, err)
		}
	})
	b.Run("database-sql/no-args", func(b *testing.B) {
		for b.Loop() {
			_, err := db.ExecContext(ctx, "SELECT 1")
			mustB(b, err)
		}
	})
	b.Run("database-sql/array-arg", func(b *testing.B) {
		for b.Loop() {
			_, err := db.ExecContext(ctx, arr, lit)
			mustB(b, err)
		}
	})
	b.Run("database-sql-conn/array-arg", func(b *testing.B) {
		c, err := db.Conn(ctx)
		mustB(b, err)
		defer c.Close()
		for b.Loop() {
			_, err := c.ExecContext(ctx, arr, lit)
			mustB(b, err)
		}
	})
	b.Run("database-sql/begin-commit", func(b *testing.B) {
		for b.Loop() {
			tx, err := db.BeginTx(ctx, nil)
			mustB(b, err)
			mustB(b, tx.Commit())
		}
	})
	b.Run("pgx/begin-commit", func(b *testing.B) {
		for b.Loop() {
			tx, err := pool.Begin(ctx)
			mustB(b, err)
			mustB(b, tx.Commit(ctx))
		}
	})
}
