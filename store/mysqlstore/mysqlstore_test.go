package mysqlstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.RunChild(harness)
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

var harness = mysqltest.Harness("mysqlstore")

// TestConformance runs the suite on MariaDB (or the MySQL of
// TXINBOX_TEST_MYSQL_URL).
func TestConformance(t *testing.T) {
	storetest.Run(t, harness)
}
