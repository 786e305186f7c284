package demo_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/testdb"
)

// bouncerDB is a database of the test's own behind the PgBouncer at base,
// in pgx's query exec mode mode ("": pgx's default).
func bouncerDB(t *testing.T, base, mode string) string {
	t.Helper()
	u, err := url.Parse(testdb.WithDatabase(t, base, testdb.NewDatabase(t, testdb.Require(t))))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("default_query_exec_mode")
	if mode != "" {
		q.Set("default_query_exec_mode", mode)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestCrashBehindPgBouncer: the crash demo (consumer processes SIGKILLed
// after the effect, between commit and ack, and at random) is exact
// through PgBouncer in transaction pooling (pgx's cache_describe and exec
// modes) and in session pooling (pgx's default mode).
func TestCrashBehindPgBouncer(t *testing.T) {
	t.Parallel()
	tx, session := testdb.RequirePgBouncer(t), testdb.RequirePgBouncerSession(t)
	for _, c := range []struct{ name, base, mode string }{
		{"transaction/cache_describe", tx, "cache_describe"},
		{"transaction/exec", tx, "exec"},
		{"session/default", session, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runDemoJSON(t, 0, "--db", bouncerDB(t, c.base, c.mode), "--messages", "1000", "--duplicates", "0.3", "--crashes", "12")
			checkExactlyOnce(t, r, 1000, 12)
		})
	}
}

// TestDemoRefusesStatementCacheBehindTransactionPool: with pgx's default
// exec mode through a transaction pool, the demo stops before its first
// batch with an error naming the setting and the fix (it died with
// "prepared statement stmtcache_... does not exist" before).
func TestDemoRefusesStatementCacheBehindTransactionPool(t *testing.T) {
	t.Parallel()
	out, errs, code := runBin(t, "demo", "--db", bouncerDB(t, testdb.RequirePgBouncer(t), ""), "--messages", "10")
	want := "behind a transaction-pooling PgBouncer (pool_mode = transaction), default_query_exec_mode=cache_statement (pgx's default) cannot work"
	if code == 0 || !strings.Contains(errs, want) || !strings.Contains(errs, "use cache_describe or exec") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}
