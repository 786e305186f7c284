package bench_test

import (
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/mysqltest"
)

// TestBenchMySQLScenarios: on --db mysql:// the ceiling, the batch
// handler and the declarative effect run in one run, each with its check
// (one effect per inbox row), and their ratios to the ceiling are printed.
func TestBenchMySQLScenarios(t *testing.T) {
	url := mysqltest.Require(t)
	out, errs, code := run(t, "bench", "--db", url, "--only", "ceiling,txinbox,declarative", "--duplicates", "0.3",
		"--duration", "300ms", "--rounds", "1", "--batch", "20")
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errs)
	}
	for _, want := range []string{"txinbox-declarative", "txinbox vs ceiling at 30% duplicates", "txinbox declarative vs ceiling at 30% duplicates"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench on MySQL: no %q in\n%s", want, out)
		}
	}
}
