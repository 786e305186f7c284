package bench_test

import (
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/cli/clitest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestBenchSmoke runs every PostgreSQL scenario briefly: the report has its
// headline figures and every scenario was exactly once (bench checks one
// effect per inbox row itself). Speed is not asserted here.
func TestBenchSmoke(t *testing.T) {
	testdb.Require(t)
	var rep struct {
		Ceiling           float64 `json:"ceiling_msgs_per_s"`
		CeilingOneRow     float64 `json:"ceiling_one_row_msgs_per_s"`
		TxinboxVsFullRow  float64 `json:"txinbox_vs_full_row_ceiling"`
		Seed              float64 `json:"seed_msgs_per_s"`
		Txinbox           float64 `json:"txinbox_msgs_per_s"`
		Declarative       float64 `json:"txinbox_declarative_msgs_per_s"`
		Kafka             float64 `json:"e2e_kafka_msgs_per_s"`
		Watermark         float64 `json:"kafka_watermark_msgs_per_s"`
		Ceiling30         float64 `json:"ceiling_msgs_per_s_dup30"`
		Kafka30           float64 `json:"e2e_kafka_msgs_per_s_dup30"`
		Declarative30     float64 `json:"txinbox_declarative_msgs_per_s_dup30"`
		WatermarkVsOneRow float64 `json:"kafka_watermark_vs_one_row_ceiling"`
		DBSQL             float64 `json:"database_sql_msgs_per_s"`
		DBSQLDecl30       float64 `json:"database_sql_declarative_msgs_per_s_dup30"`
		DBSQLVsTxinbox    float64 `json:"database_sql_vs_txinbox"`
		ScaleOut          []struct {
			Processes  int     `json:"processes"`
			MsgsPerSec float64 `json:"msgs_per_s"`
			Doubled    int64   `json:"doubled"`
			Lost       int64   `json:"lost"`
		} `json:"scale_out"`
		Results []struct {
			Name       string  `json:"name"`
			Duplicates float64 `json:"duplicates"`
			Messages   int64   `json:"messages"`
			Effects    int64   `json:"effects"`
			Error      string  `json:"error"`
		} `json:"results"`
	}
	out := benchJSON(t, &rep, "--duration", "600ms", "--rounds", "1", "--batch", "10",
		"--only", "ceiling,ceiling-full-row,ceiling-one-row,seed,seed16,txinbox,declarative,database-sql,database-sql-declarative,e2e-kafka,kafka-watermark,scale-out", "--duplicates", "0,0.3",
		"--scale-out", "1,2", "--scale-out-records", "3000", "--scale-out-kills", "0", "--kafka-records", "5000", "--serve-bin", clitest.Bin())
	for name, v := range map[string]float64{"ceiling": rep.Ceiling, "ceiling-one-row": rep.CeilingOneRow, "seed": rep.Seed,
		"txinbox": rep.Txinbox, "declarative": rep.Declarative, "e2e-kafka": rep.Kafka, "kafka-watermark": rep.Watermark,
		"ceiling at 30%": rep.Ceiling30, "e2e-kafka at 30%": rep.Kafka30, "declarative at 30%": rep.Declarative30,
		"kafka-watermark / one-row ceiling": rep.WatermarkVsOneRow, "txinbox / full-row ceiling": rep.TxinboxVsFullRow,
		"database-sql": rep.DBSQL, "database-sql-declarative at 30%": rep.DBSQLDecl30, "database-sql / txinbox": rep.DBSQLVsTxinbox} {
		if v <= 0 {
			t.Errorf("%s: %v in the report", name, v)
		}
	}
	if len(rep.Results) != 22 || len(rep.ScaleOut) != 2 || rep.ScaleOut[1].Processes != 2 || rep.ScaleOut[1].MsgsPerSec <= 0 {
		t.Fatalf("report = %s", out)
	}
	for _, r := range rep.Results {
		if r.Error != "" || r.Messages == 0 || r.Effects == 0 || r.Effects > r.Messages {
			t.Errorf("scenario %+v", r)
		}
		// Repeats start four rounds of batches (160 ids) into a scenario, and
		// 200 records into e2e-kafka's topic (4 partitions consumed together).
		// Without an inbox row per id (ceiling-one-row, offsets as the inbox)
		// a repeat is a new message.
		oneRow := r.Name == "ceiling-one-row" || r.Name == "kafka-watermark"
		if r.Duplicates > 0 && r.Name != "seed" && !oneRow && r.Messages > 1000 && r.Effects >= r.Messages {
			t.Errorf("%s at %.0f%% duplicates: %d effects for %d messages", r.Name, 100*r.Duplicates, r.Effects, r.Messages)
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--db", "inbox.db"}, {"--db", "postgres://x/y", "--duplicates", "2"}, {"--db", "postgres://x/y", "--only", "magic"},
		{"--db", "postgres://x/y", "--only", "light-busy", "--busy", "0"},
		{"--db", "postgres://x/y", "--only", "light-busy", "--busy", "100000"},
		{"--db", "postgres://x/y", "--only", "scale-out", "--scale-out", "1,9"},
	} {
		_, errs, code := run(t, append([]string{"bench"}, args...)...)
		if code != 2 || !strings.Contains(errs, "txinbox bench:") {
			t.Errorf("bench %v: %d %q", args, code, errs)
		}
		if args[len(args)-2] == "--busy" && !strings.Contains(errs, "--busy must be") {
			t.Errorf("bench %v: %q, want it to name --busy", args, errs)
		}
	}
}
