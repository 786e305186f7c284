package demo_test

import (
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/mysqltest"
)

// TestCrashMariaDB is TestCrashPostgres on MySQL or MariaDB (--db
// mysql://): SIGKILLs of the consumer over invoices with 30% re-sent,
// counted by the demo itself; and the sabotage of the key is caught
// there too (the check can fail).
func TestCrashMariaDB(t *testing.T) {
	t.Parallel()
	url := mysqltest.NewDatabase(t)
	r := runDemoJSON(t, 0, "--db", url, "--messages", "3000", "--duplicates", "0.3", "--crashes", "30")
	if !strings.HasPrefix(r.Where, "mysql://") {
		t.Errorf("the demo ran on %q, not on MySQL", r.Where)
	}
	checkExactlyOnce(t, r, 3000, 30)
	s := runDemoJSON(t, 1, "--db", mysqltest.NewDatabase(t), "--sabotage", "delivery-key", "--crashes", "9")
	if s.OK || s.DoubleEffects == 0 {
		t.Errorf("sabotage delivery-key not caught on MySQL: %+v", s)
	}
}
