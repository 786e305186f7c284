// Package libpq runs txinbox's store conformance suite on pgdbstore over
// lib/pq, the other database/sql PostgreSQL driver (pgx's stdlib is
// tested in the main module, which lib/pq must not enter).
package libpq

import (
	"testing"

	_ "github.com/lib/pq"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.RunChild(harness)
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		// lib/pq sends a cancelled statement's cancel request from a
		// goroutine of its own, which may outlive the test that cancelled
		// (it dials the server, up to 10 s): not a leak of the store's.
		goleak.IgnoreAnyFunction("github.com/lib/pq.(*conn).watchCancel.func1"))
}

var harness = pgdbtest.Harness("pgdbstore-libpq", "postgres", false)

// TestConformance runs the suite on lib/pq.
func TestConformance(t *testing.T) {
	storetest.Run(t, harness)
}

// TestConformancePartitioned runs the suite on the partitioned layout.
func TestConformancePartitioned(t *testing.T) {
	storetest.Run(t, pgdbtest.Harness("pgdbstore-libpq-partitioned", "postgres", true))
}
