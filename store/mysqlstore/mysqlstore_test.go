package mysqlstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store/mysqlstore"
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

// TestConformanceUnionForm runs the suite with the statements' tables of
// rows spelled as MySQL reads them (UNION ALL; on MariaDB with
// interpolated parameters they are VALUES lists otherwise).
func TestConformanceUnionForm(t *testing.T) {
	mysqlstore.ForceUnion(t.Cleanup)
	storetest.Run(t, harness)
}
