package as4_test

import (
	"cmp"
	"context"
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// newPGDB starts an endpoint on a fresh PostgreSQL schema through
// pgdbstore (database/sql on pgx's stdlib) and as4pg.SQLStore.
func newPGDB(t testing.TB, o options) *endpoint {
	t.Helper()
	ctx := context.Background()
	db := pgdbtest.Open(t, "pgx", testdb.NewSchema(t, testdb.Require(t)), 8)
	driver, err := pgdbstore.New(db, pgdbstore.Options{})
	must(t, err)
	must(t, driver.Migrate(ctx))
	st, err := as4pg.NewSQL(db, as4pg.Options{})
	must(t, err)
	must(t, st.Migrate(ctx))
	must(t, st.Migrate(ctx)) // idempotent
	e := &endpoint{
		count: func(t *testing.T, q string, args ...any) int {
			var n int
			must(t, db.QueryRowContext(ctx, q, args...).Scan(&n))
			return n
		},
		exec: func(t *testing.T, q string, args ...any) { _, err := db.ExecContext(ctx, q, args...); must(t, err) },
	}
	h, err := as4.New(driver, as4.Config[*sql.Tx]{Store: st, Deliver: deliver[*sql.Tx](e, o),
		MaxBodyBytes: o.maxBody, MaxConcurrentRequests: o.maxConcurrent, MaxDecompressedBytes: o.maxDecompressed,
		Agreements: o.agreements, AcceptUnverifiedSecurity: o.acceptUnverified, Security: o.security,
		Logger: cmp.Or(o.logger, quiet), Inbox: txinbox.Config[*sql.Tx]{MaxAttempts: o.maxAttempts, Logger: quiet}})
	must(t, err)
	serve(t, e, h)
	return e
}
