package demo_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/testdb"
)

type demoResult struct {
	Where             string         `json:"where"`
	Published         int            `json:"published"`
	Unique            int            `json:"unique"`
	DuplicatesSkipped int            `json:"duplicates_skipped"`
	Effects           int            `json:"effects"`
	OutboxRows        int            `json:"outbox_rows"`
	DoubleEffects     int            `json:"double_effects"`
	Lost              int            `json:"lost"`
	Crashes           int            `json:"crashes"`
	CrashPoints       map[string]int `json:"crash_points"`
	OK                bool           `json:"ok"`
}

func runDemoJSON(t *testing.T, wantCode int, args ...string) demoResult {
	t.Helper()
	out, errs, code := runBin(t, append([]string{"demo", "--json"}, args...)...)
	if code != wantCode {
		t.Fatalf("demo %v exited %d, want %d\nstdout: %s\nstderr: %s", args, code, wantCode, out, errs)
	}
	var r demoResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("demo --json printed %q: %v", out, err)
	}
	return r
}

func checkExactlyOnce(t *testing.T, r demoResult, unique, crashes int) {
	t.Helper()
	if !r.OK || r.Effects != unique || r.OutboxRows != unique || r.DoubleEffects != 0 || r.Lost != 0 || r.Unique != unique {
		t.Errorf("not exactly once: %+v", r)
	}
	if r.Crashes != crashes {
		t.Errorf("crashes = %d, want %d (%v)", r.Crashes, crashes, r.CrashPoints)
	}
	for _, p := range []string{"after-effect-before-commit", "after-commit-before-ack", "random-moment"} {
		if crashes >= 3 && r.CrashPoints[p] == 0 {
			t.Errorf("no crash at %s: %v", p, r.CrashPoints)
		}
	}
	if r.DuplicatesSkipped < r.Published-r.Unique {
		t.Errorf("duplicates skipped %d < re-sent %d", r.DuplicatesSkipped, r.Published-r.Unique)
	}
}

func TestDemoSQLiteDefault(t *testing.T) {
	t.Parallel()
	out, errs, code := runBin(t, "demo")
	if code != 0 || !strings.Contains(out, "OK: every invoice was applied exactly once.") {
		t.Fatalf("txinbox demo exited %d\n%s\n%s", code, out, errs)
	}
}

func TestDemoSQLiteJSON(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "demo.db")
	r := runDemoJSON(t, 0, "--db", db, "--messages", "800", "--duplicates", "0.5", "--crashes", "9")
	checkExactlyOnce(t, r, 800, 9)
	if r.Published != 1200 {
		t.Errorf("published = %d, want 1200", r.Published)
	}
}

// TestCrashPostgres is the crash proof: 100 SIGKILLs of the consumer over
// 10,000 invoices with 30% re-sent, on PostgreSQL.
func TestCrashPostgres(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	url := testdb.URL() + "&search_path=" + schema + "&application_name=txinbox-crash-test"
	if !strings.Contains(testdb.URL(), "?") {
		url = strings.Replace(url, "&search_path", "?search_path", 1)
	}
	r := runDemoJSON(t, 0, "--db", url, "--messages", "10000", "--duplicates", "0.3", "--crashes", "100")
	checkExactlyOnce(t, r, 10000, 100)
}

// TestCrashPostgresDatabaseSQL is TestCrashPostgres on the database/sql
// store (pgdbstore on pgx's stdlib: txinbox_store=database/sql in --db).
func TestCrashPostgresDatabaseSQL(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	url := testdb.URL() + "&search_path=" + schema + "&application_name=txinbox-crash-test&txinbox_store=database/sql"
	if !strings.Contains(testdb.URL(), "?") {
		url = strings.Replace(url, "&search_path", "?search_path", 1)
	}
	r := runDemoJSON(t, 0, "--db", url, "--messages", "10000", "--duplicates", "0.3", "--crashes", "100")
	if !strings.Contains(r.Where, "txinbox_store=database/sql") {
		t.Errorf("the demo ran on %q, not on the database/sql store", r.Where)
	}
	checkExactlyOnce(t, r, 10000, 100)
}

func TestDemoCatchesSabotage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode  string
		check func(demoResult) bool
	}{
		{"delivery-key", func(r demoResult) bool { return r.DoubleEffects > 0 }},
		{"ack-first", func(r demoResult) bool { return r.Lost > 0 }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			r := runDemoJSON(t, 1, "--db", filepath.Join(t.TempDir(), "s.db"), "--sabotage", tc.mode, "--crashes", "9")
			if r.OK || !tc.check(r) {
				t.Errorf("sabotage %s not caught: %+v", tc.mode, r)
			}
		})
	}
}

func TestDemoBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--messages", "0"}, {"--duplicates", "1.5"}, {"--source", "carrier-pigeon"}, {"--crashes", "-1"},
		{"--db", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2"},
	} {
		_, errs, code := runBin(t, append([]string{"demo"}, args...)...)
		if code == 0 || (!strings.Contains(errs, "txinbox demo:") && !strings.Contains(errs, "for flag -")) {
			t.Errorf("demo %v: exit %d, stderr %q", args, code, errs)
		}
	}
}
