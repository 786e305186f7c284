package testdb

import (
	"context"
	"os"
	"testing"
	"time"
)

// RequirePgBouncer returns TXINBOX_PGBOUNCER_URL, the URL of a PgBouncer in
// transaction pooling in front of the test database (.ci/start-pgbouncer
// prints it), once it answers. Without it the test skips, naming the
// variable; under TXINBOX_REQUIRE_PGBOUNCER=1 or CI=true it fails instead.
func RequirePgBouncer(t testing.TB) string {
	t.Helper()
	return requireBouncer(t, "TXINBOX_PGBOUNCER_URL")
}

// RequirePgBouncerSession is RequirePgBouncer for
// TXINBOX_PGBOUNCER_SESSION_URL, a PgBouncer in session pooling in front
// of the test database (.ci/start-pgbouncer starts it on the port after
// the transaction pool's, and .ci/run exports its URL).
func RequirePgBouncerSession(t testing.TB) string {
	t.Helper()
	return requireBouncer(t, "TXINBOX_PGBOUNCER_SESSION_URL")
}

func requireBouncer(t testing.TB, env string) string {
	t.Helper()
	u := os.Getenv(env)
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
	if os.Getenv("TXINBOX_REQUIRE_PGBOUNCER") == "1" || os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
