package bench_test

import (
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/testdb"
)

// TestBenchOnlyCeilingRatios: with --only ceiling no ratio is printed or
// emitted, since none has both its sides measured (a 0% read as a result).
func TestBenchOnlyCeilingRatios(t *testing.T) {
	testdb.Require(t)
	args := []string{"bench", "--db", testdb.URL(), "--only", "ceiling", "--duration", "200ms", "--rounds", "1", "--batch", "10"}
	out, errs, code := run(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("bench --json exited %d: %s", code, errs)
	}
	if !strings.Contains(out, `"ceiling_msgs_per_s":`) || strings.Contains(out, "_vs_") {
		t.Errorf("bench --only ceiling --json emits ratios of scenarios it did not run:\n%s", out)
	}
	out, errs, code = run(t, args...)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errs)
	}
	if strings.Contains(out, "/ ceiling") || strings.Contains(out, "/ seed") {
		t.Errorf("bench --only ceiling prints ratios of scenarios it did not run:\n%s", out)
	}
}
