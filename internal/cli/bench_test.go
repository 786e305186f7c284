package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/testdb"
)

// TestBenchSmoke runs every PostgreSQL scenario briefly: the report has its
// headline figures and every scenario was exactly once (bench checks one
// effect per inbox row itself). Speed is not asserted here.
func TestBenchSmoke(t *testing.T) {
	testdb.Require(t)
	out, errs, code := run(t, "bench", "--db", testdb.URL(), "--duration", "600ms", "--rounds", "1", "--batch", "10", "--json",
		"--only", "ceiling,seed,seed16,txinbox,e2e-kafka", "--duplicates", "0,0.3")
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errs)
	}
	var rep struct {
		Ceiling float64 `json:"ceiling_msgs_per_s"`
		Seed    float64 `json:"seed_msgs_per_s"`
		Txinbox float64 `json:"txinbox_msgs_per_s"`
		Kafka   float64 `json:"e2e_kafka_msgs_per_s"`
		Results []struct {
			Name       string  `json:"name"`
			Duplicates float64 `json:"duplicates"`
			Messages   int64   `json:"messages"`
			Effects    int64   `json:"effects"`
			Error      string  `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json printed %q: %v", out, err)
	}
	if rep.Ceiling <= 0 || rep.Seed <= 0 || rep.Txinbox <= 0 || rep.Kafka <= 0 || len(rep.Results) != 10 {
		t.Fatalf("report = %s", out)
	}
	for _, r := range rep.Results {
		if r.Error != "" || r.Messages == 0 || r.Effects == 0 || r.Effects > r.Messages {
			t.Errorf("scenario %+v", r)
		}
		// Repeats start four rounds of batches (160 ids) into a scenario, and
		// 200 records into e2e-kafka's topic (4 partitions consumed together).
		if r.Duplicates > 0 && r.Name != "seed" && r.Messages > 1000 && r.Effects >= r.Messages {
			t.Errorf("%s at %.0f%% duplicates: %d effects for %d messages", r.Name, 100*r.Duplicates, r.Effects, r.Messages)
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--db", "inbox.db"}, {"--db", "postgres://x/y", "--duplicates", "2"}, {"--db", "postgres://x/y", "--only", "magic"},
	} {
		_, errs, code := run(t, append([]string{"bench"}, args...)...)
		if code != 2 || !strings.Contains(errs, "txinbox bench:") {
			t.Errorf("bench %v: %d %q", args, code, errs)
		}
	}
}
