package demo_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/kafkatest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// checkKafkaExactlyOnce is checkExactlyOnce without its count of skipped
// duplicates: a child SIGKILLed between a commit and its report of the
// outcomes takes a few counts with it (the effects are counted from the
// database either way).
func checkKafkaExactlyOnce(t *testing.T, r demoResult, unique, crashes int) {
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

func TestDemoKafkaSQLite(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "demo.db")
	r := runDemoJSON(t, 0, "--source", "kafka", "--db", db, "--messages", "600", "--duplicates", "0.3", "--crashes", "6")
	checkKafkaExactlyOnce(t, r, 600, 6)
	if r.Published != 780 {
		t.Errorf("published = %d, want 780", r.Published)
	}
}

func TestDemoKafkaPostgres(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	url := testdb.URL() + "&search_path=" + schema + "&application_name=txinbox-kafka-demo-test"
	if !strings.Contains(testdb.URL(), "?") {
		url = strings.Replace(url, "&search_path", "?search_path", 1)
	}
	r := runDemoJSON(t, 0, "--source", "kafka", "--db", url, "--messages", "3000", "--duplicates", "0.3", "--crashes", "15")
	checkKafkaExactlyOnce(t, r, 3000, 15)
}

func TestDemoKafkaText(t *testing.T) {
	t.Parallel()
	out, errs, code := runBin(t, "demo", "--source", "kafka", "--messages", "200", "--crashes", "3",
		"--db", filepath.Join(t.TempDir(), "demo.db"))
	if code != 0 || !strings.Contains(out, "OK: every invoice was applied exactly once.") || !strings.Contains(out, "kfake") {
		t.Fatalf("txinbox demo --source kafka exited %d\n%s\n%s", code, out, errs)
	}
}

func TestDemoKafkaCatchesSabotage(t *testing.T) {
	t.Parallel()
	r := runDemoJSON(t, 1, "--source", "kafka", "--db", filepath.Join(t.TempDir(), "s.db"), "--sabotage", "delivery-key", "--crashes", "3")
	if r.OK || r.DoubleEffects == 0 {
		t.Errorf("sabotage delivery-key not caught: %+v", r)
	}
	_, errs, code := runBin(t, "demo", "--source", "kafka", "--sabotage", "ack-first", "--db", filepath.Join(t.TempDir(), "a.db"))
	if code == 0 || !strings.Contains(errs, "not available with --source kafka") {
		t.Errorf("--sabotage ack-first with kafka: exit %d, stderr %q", code, errs)
	}
}

// TestDemoKafkaApacheKafka runs the demo on the real Apache Kafka of
// TXINBOX_TEST_KAFKA_BROKERS (.ci/start-kafka) instead of kfake: its consumer
// children join with the shortest session timeout the brokers allow (they
// were refused with INVALID_SESSION_TIMEOUT, the demo's 600ms being below
// any real broker's group.min.session.timeout.ms), and every invoice is
// applied exactly once through 6 SIGKILLs.
func TestDemoKafkaApacheKafka(t *testing.T) {
	t.Parallel()
	seeds := kafkatest.RequireBrokers(t)
	r := runDemoJSON(t, 0, "--source", "kafka", "--kafka-brokers", strings.Join(seeds, ","),
		"--db", filepath.Join(t.TempDir(), "demo.db"), "--messages", "600", "--duplicates", "0.3", "--crashes", "6")
	checkKafkaExactlyOnce(t, r, 600, 6)
}
