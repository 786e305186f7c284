package pgdbstore_test

import (
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.RunChild(harness)
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

var harness = pgdbtest.Harness("pgdbstore-pgx", "pgx", false)

// TestConformance runs the suite on pgx's stdlib.
func TestConformance(t *testing.T) {
	storetest.Run(t, harness)
}

// TestConformancePartitioned runs the suite on the partitioned layout.
func TestConformancePartitioned(t *testing.T) {
	storetest.Run(t, pgdbtest.Harness("pgdbstore-pgx-partitioned", "pgx", true))
}

// TestConformanceBehindPgBouncer runs the suite on pgx's stdlib through
// PgBouncer in session pooling with the read-only guard on (the default),
// and in transaction pooling with it off, as CheckPooler demands there
// (TestCheckPoolerTransactionPool shows the refusal), crash tests with
// SIGKILLed child processes included.
func TestConformanceBehindPgBouncer(t *testing.T) {
	tx, session := testdb.RequirePgBouncer(t), testdb.RequirePgBouncerSession(t)
	t.Run("session", func(t *testing.T) {
		storetest.Run(t, pgdbtest.BouncerHarness("pgdbstore-pgbouncer-session", "pgx", session, true))
	})
	t.Run("transaction", func(t *testing.T) {
		storetest.Run(t, pgdbtest.BouncerHarness("pgdbstore-pgbouncer-transaction", "pgx", tx, false))
	})
}
