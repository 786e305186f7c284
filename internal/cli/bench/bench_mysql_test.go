package bench_test

import (
	"encoding/json"
	"testing"

	"github.com/txinbox/txinbox/internal/mysqltest"
)

// TestBenchMySQLSmoke runs the ceiling, txinbox and purge scenarios on
// MariaDB for a moment each: every scenario reports a rate, the ratio to
// the ceiling is there, and the purge removed every expired row (bench
// itself checks one effect per inbox row). Speed is not asserted.
func TestBenchMySQLSmoke(t *testing.T) {
	url := mysqltest.NewDatabase(t)
	out, errs, code := run(t, "bench", "--db", url, "--json", "--only", "ceiling,txinbox,purge",
		"--duplicates", "0.3", "--duration", "300ms", "--rounds", "1", "--batch", "10", "--purge-rows", "2500")
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errs)
	}
	var rep struct {
		Results []struct {
			Name       string  `json:"name"`
			Error      string  `json:"error"`
			MsgsPerSec float64 `json:"msgs_per_s"`
		} `json:"results"`
		VsCeiling map[string]float64 `json:"txinbox_vs_ceiling"`
		Purge     []struct {
			Mode    string  `json:"mode"`
			Purged  int64   `json:"purged_rows"`
			During  float64 `json:"during_purge_msgs_per_s"`
			RowsPer float64 `json:"purge_rows_per_s"`
		} `json:"purge"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json printed %q: %v", out, err)
	}
	if len(rep.Results) != 2 || rep.VsCeiling["30%"] <= 0 {
		t.Fatalf("report = %s", out)
	}
	for _, r := range rep.Results {
		if r.Error != "" || r.MsgsPerSec <= 0 {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	if len(rep.Purge) != 1 || rep.Purge[0].Mode != "rows" || rep.Purge[0].Purged != 2500 || rep.Purge[0].During <= 0 || rep.Purge[0].RowsPer <= 0 {
		t.Errorf("purge = %+v", rep.Purge)
	}
}
