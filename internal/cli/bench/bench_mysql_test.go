package bench_test

import (
	"encoding/json"
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

// TestBenchMySQLPurge runs the purge scenario on MariaDB: the purge
// removed every expired row while processing ran (bench itself checks
// one effect per inbox row), and reports a rate. Speed is not asserted.
func TestBenchMySQLPurge(t *testing.T) {
	url := mysqltest.NewDatabase(t)
	out, errs, code := run(t, "bench", "--db", url, "--json", "--only", "purge",
		"--duration", "300ms", "--batch", "10", "--purge-rows", "2500")
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errs)
	}
	var rep struct {
		Purge []struct {
			Mode    string  `json:"mode"`
			Purged  int64   `json:"purged_rows"`
			During  float64 `json:"during_purge_msgs_per_s"`
			RowsPer float64 `json:"purge_rows_per_s"`
		} `json:"purge"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json printed %q: %v", out, err)
	}
	if len(rep.Purge) != 1 || rep.Purge[0].Mode != "rows" || rep.Purge[0].Purged != 2500 || rep.Purge[0].During <= 0 || rep.Purge[0].RowsPer <= 0 {
		t.Errorf("purge = %+v in %s", rep.Purge, out)
	}
}
