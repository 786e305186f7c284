package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/testkit"
)

// RequirePgBouncer returns TXINBOX_TEST_PGBOUNCER_URL, the URL of a
// PgBouncer in transaction pooling in front of the test database
// (.ci/start-pgbouncer prints it), once it answers. Without it the test
// skips, naming the variable; under TXINBOX_REQUIRE_PGBOUNCER=1 or CI=true
// it fails instead. TXINBOX_PGBOUNCER_URL, its older name, is read when it
// is unset, until every branch uses the new one.
func RequirePgBouncer(t testing.TB) string {
	t.Helper()
	return requireBouncer(t, "TXINBOX_TEST_PGBOUNCER_URL", "TXINBOX_PGBOUNCER_URL")
}

// RequirePgBouncerSession is RequirePgBouncer for
// TXINBOX_TEST_PGBOUNCER_SESSION_URL (older name
// TXINBOX_PGBOUNCER_SESSION_URL), a PgBouncer in session pooling in front
// of the test database (.ci/start-pgbouncer starts it on the port after
// the transaction pool's, and .ci/run exports its URL).
func RequirePgBouncerSession(t testing.TB) string {
	t.Helper()
	return requireBouncer(t, "TXINBOX_TEST_PGBOUNCER_SESSION_URL", "TXINBOX_PGBOUNCER_SESSION_URL")
}

// requireBouncer is the PgBouncer whose URL env (else old) names.
func requireBouncer(t testing.TB, env, old string) string {
	t.Helper()
	u := testkit.Getenv(env, old)
	msg := "no PgBouncer: set " + env + " (run .ci/start-pgbouncer)"
	if u != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := pingCtx(ctx, u)
		if err == nil {
			return u
		}
		msg = "no PgBouncer at " + env + ": " + u + ": " + err.Error()
	}
	testkit.Unavailable(t, "TXINBOX_REQUIRE_PGBOUNCER", msg)
	return ""
}
