package bench_test

import (
	"context"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgstore"
)

// TestBenchPurgeSmoke runs the purge scenario on a few thousand rows: both
// modes report a purge and a throughput (bench itself checks that every
// expired row went and processing stayed exactly once). Speed is not
// asserted.
func TestBenchPurgeSmoke(t *testing.T) {
	testdb.Require(t)
	var rep struct {
		Purge []struct {
			Mode       string  `json:"mode"`
			Expired    int64   `json:"expired_rows"`
			Purged     int64   `json:"purged_rows"`
			Baseline   float64 `json:"baseline_msgs_per_s"`
			During     float64 `json:"during_purge_msgs_per_s"`
			RowsPerSec float64 `json:"purge_rows_per_s"`
		} `json:"purge"`
	}
	out := benchJSON(t, &rep, "--only", "purge", "--purge-rows", "3000",
		"--duration", "200ms", "--batch", "10")
	if len(rep.Purge) != 2 || rep.Purge[0].Mode != "rows" || rep.Purge[1].Mode != "partitions" {
		t.Fatalf("report = %s", out)
	}
	for _, p := range rep.Purge {
		if p.Expired != 3000 || p.Purged <= 0 || p.Baseline <= 0 || p.During <= 0 || p.RowsPerSec <= 0 {
			t.Errorf("%+v", p)
		}
	}
	if rep.Purge[0].Purged != 3000 {
		t.Errorf("row mode purged %d rows, want 3000", rep.Purge[0].Purged)
	}
}

// TestPurgePartitionedCommand migrates a partitioned inbox with the
// command, ages period 1 past the retention, and checks that purge
// --dry-run names the partition and purge drops it.
func TestPurgePartitionedCommand(t *testing.T) {
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	ctx := context.Background()
	if out, errs, code := run(t, "migrate", "--db", testdb.URL(), "--schema", schema, "--partitioned", "--partition-period", "12h"); code != 0 {
		t.Fatalf("migrate --partitioned: %d %q %q", code, out, errs)
	}
	d, err := pgstore.New(admin, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	periods, err := d.Periods(ctx)
	if err != nil || len(periods) != 1 || periods[0].Length.Hours() != 12 {
		t.Fatalf("Periods = %+v, %v", periods, err)
	}
	if _, err := admin.Exec(ctx, d.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, payload_hash, received_at, period)
		SELECT 's', 'm-' || g, '\x00', now() - interval '40 days', 1 FROM generate_series(1, 20) g`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RotatePeriod(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `UPDATE "`+schema+`".txinbox_inbox_periods SET ended_at = now() - interval '35 days' WHERE period = 1`); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, "purge", "--db", testdb.URL(), "--schema", schema, "--dry-run")
	if code != 0 || !strings.HasPrefix(out, "would purge 20 inbox rows") || !strings.Contains(out, "would drop the partitions of periods [1]") {
		t.Fatalf("purge --dry-run: %d %q %q", code, out, errs)
	}
	out, errs, code = run(t, "purge", "--db", testdb.URL(), "--schema", schema)
	if code != 0 || !strings.HasPrefix(out, "purged 20 inbox rows") || !strings.Contains(out, "dropped the partitions of periods [1]") {
		t.Fatalf("purge: %d %q %q", code, out, errs)
	}
	var parts int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass($1)`, d.Tables().Inbox).Scan(&parts); err != nil || parts != 2 {
		t.Errorf("partitions left: %d, %v; want 2", parts, err)
	}
}
