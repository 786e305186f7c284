package as4_test

import (
	"cmp"
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4my"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// newMySQL starts an endpoint on a fresh MySQL or MariaDB database
// through mysqlstore and as4my.
func newMySQL(t testing.TB, o options) *endpoint {
	t.Helper()
	ctx := context.Background()
	db := mysqltest.Open(t, mysqltest.NewDatabase(t), 8)
	driver, err := mysqlstore.New(db, mysqlstore.Options{})
	must(t, err)
	must(t, driver.Migrate(ctx))
	st, err := as4my.New(db, as4my.Options{})
	must(t, err)
	must(t, st.Migrate(ctx))
	must(t, st.Migrate(ctx)) // idempotent
	e := &endpoint{
		count: func(t *testing.T, q string, args ...any) int {
			var n int
			q, args = questionMarks(q, args)
			must(t, db.QueryRowContext(ctx, q, args...).Scan(&n))
			return n
		},
		exec: func(t *testing.T, q string, args ...any) {
			q, args = questionMarks(q, args)
			_, err := db.ExecContext(ctx, q, args...)
			must(t, err)
		},
	}
	h, err := as4.New(driver, as4.Config[*sql.Tx]{Store: st, Deliver: deliver[*sql.Tx](e, o),
		MaxBodyBytes: o.maxBody, MaxConcurrentRequests: o.maxConcurrent, MaxDecompressedBytes: o.maxDecompressed,
		MaxDecompressedInFlight: o.maxDecompressedInFlight, Agreements: o.agreements, AcceptUnverifiedSecurity: o.acceptUnverified,
		Security: o.security, Logger: cmp.Or(o.logger, quiet), Inbox: txinbox.Config[*sql.Tx]{MaxAttempts: o.maxAttempts, Logger: quiet}})
	must(t, err)
	serve(t, e, h)
	return e
}

var dollar = regexp.MustCompile(`\$([0-9]+)`)

// questionMarks turns the tests' $N (PostgreSQL's and SQLite's form) into
// MySQL's "?", with the arguments in the order the markers appear.
func questionMarks(q string, args []any) (string, []any) {
	var out []any
	q = dollar.ReplaceAllStringFunc(q, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		out = append(out, args[n-1])
		return "?"
	})
	if out == nil {
		out = args // already "?"
	}
	return q, out
}
