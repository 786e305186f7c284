package bench_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/testdb"
)

// TestBenchStuckScenarioReported injects a stall: the scale-out's serve
// processes are a program that never joins the group (as members that log
// "unable to join group session" for minutes). The scenario is stopped at
// its --scenario-timeout and reported failed with where it stood, and the
// run still prints what it measured (the ceiling), in JSON and as text,
// exiting 1.
func TestBenchStuckScenarioReported(t *testing.T) {
	testdb.Require(t)
	stuck := filepath.Join(t.TempDir(), "stuck-serve")
	if err := os.WriteFile(stuck, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"bench", "--db", testdb.URL(), "--only", "ceiling,scale-out", "--duration", "200ms", "--rounds", "1",
		"--batch", "10", "--scale-out", "1", "--scale-out-kills", "0", "--scale-out-records", "1000",
		"--serve-bin", stuck, "--scenario-timeout", "3s"}
	t0 := time.Now()
	out, errs, code := run(t, append(args, "--json")...)
	if code != 1 {
		t.Fatalf("bench --json with a stuck scale-out exited %d, want 1: %s", code, errs)
	}
	var rep struct {
		Ceiling float64 `json:"ceiling_msgs_per_s"`
		Failed  []struct {
			Scenario string `json:"scenario"`
			Error    string `json:"error"`
		} `json:"failed"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json printed %q: %v (stderr %s)", out, err, errs)
	}
	if rep.Ceiling <= 0 {
		t.Errorf("the ceiling measured before the stuck scenario is not in the report:\n%s", out)
	}
	if len(rep.Failed) != 1 || rep.Failed[0].Scenario != "scale-out" ||
		!strings.Contains(rep.Failed[0].Error, "passed its deadline (--scenario-timeout 3s)") ||
		!strings.Contains(rep.Failed[0].Error, "waiting for the group to settle") {
		t.Errorf("failed = %+v, want scale-out with its deadline and where it stood", rep.Failed)
	}
	if d := time.Since(t0); d > 90*time.Second {
		t.Errorf("the run took %s with a 3s scenario timeout", d)
	}
	out, _, code = run(t, args...)
	if code != 1 || !strings.Contains(out, "ceiling") || !strings.Contains(out, "failed:\n  scale-out: scale-out: passed its deadline") {
		t.Errorf("bench (text) exited %d, printed:\n%s", code, out)
	}
}
