package demo_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/testdb"
)

// checkQueueExactlyOnce checks a queue demo's summary: one effect per
// unique event, nothing lost, every crash point hit, re-sends skipped.
func checkQueueExactlyOnce(t *testing.T, r demoResult, unique, crashes int) {
	t.Helper()
	if !r.OK || r.Effects != unique || r.OutboxRows != unique || r.DoubleEffects != 0 || r.Lost != 0 || r.Unique != unique {
		t.Errorf("not exactly once: %+v", r)
	}
	if r.Crashes != crashes {
		t.Errorf("crashes = %d, want %d (%v)", r.Crashes, crashes, r.CrashPoints)
	}
	for _, p := range []string{"after-effect-before-commit", "after-commit-before-ack", "random-moment"} {
		if r.CrashPoints[p] == 0 {
			t.Errorf("no crash at %s: %v", p, r.CrashPoints)
		}
	}
	if r.Published > r.Unique && r.DuplicatesSkipped == 0 {
		t.Errorf("no duplicate skipped: %+v", r)
	}
}

// demoPostgresURL is the test database in a schema of the test's own.
func demoPostgresURL(t *testing.T, app string) string {
	t.Helper()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	sep := "&"
	if !strings.Contains(testdb.URL(), "?") {
		sep = "?"
	}
	return testdb.URL() + sep + "search_path=" + schema + "&application_name=" + app
}

func TestDemoNATSSQLite(t *testing.T) {
	t.Parallel()
	r := runDemoJSON(t, 0, "--source", "nats", "--db", filepath.Join(t.TempDir(), "demo.db"),
		"--messages", "600", "--duplicates", "0.3", "--crashes", "6")
	checkQueueExactlyOnce(t, r, 600, 6)
	if r.Published != 780 {
		t.Errorf("published = %d, want 780", r.Published)
	}
}

func TestDemoNATSPostgres(t *testing.T) {
	t.Parallel()
	r := runDemoJSON(t, 0, "--source", "nats", "--db", demoPostgresURL(t, "txinbox-nats-demo-test"),
		"--messages", "1000", "--duplicates", "0.3", "--crashes", "3")
	checkQueueExactlyOnce(t, r, 1000, 3)
}

func TestDemoNATSCatchesSabotage(t *testing.T) {
	t.Parallel()
	r := runDemoJSON(t, 1, "--source", "nats", "--db", filepath.Join(t.TempDir(), "s.db"), "--sabotage", "delivery-key",
		"--messages", "200", "--crashes", "3")
	if r.OK || r.DoubleEffects == 0 {
		t.Errorf("sabotage delivery-key not caught: %+v", r)
	}
}
