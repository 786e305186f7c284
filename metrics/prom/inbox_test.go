package prom_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestInboxCollector reads the gauges of a real SQLite inbox: rows, the
// rows past the retention and how far past it the oldest is; after the
// database is gone a scrape still succeeds with the last reading and counts
// the error.
func TestInboxCollector(t *testing.T) {
	d, p := sqliteInbox(t, "s")
	ctx := context.Background()
	now := time.Now()
	msgs := []*txinbox.Message{{ID: "a", ReceivedAt: now.Add(-40 * 24 * time.Hour)},
		{ID: "b", ReceivedAt: now.Add(-35 * 24 * time.Hour)}, {ID: "c"}}
	if _, err := p.Process(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	c := prom.NewInboxCollector(d, prom.InboxOptions{Retention: 30 * 24 * time.Hour, MaxAge: time.Nanosecond})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	want := `
# HELP txinbox_inbox_expired_rows Inbox rows received longer ago than the retention: waiting for the purge.
# TYPE txinbox_inbox_expired_rows gauge
txinbox_inbox_expired_rows 2
# HELP txinbox_inbox_rows Inbox rows (PostgreSQL: the planner's estimate once past 100,000 rows).
# TYPE txinbox_inbox_rows gauge
txinbox_inbox_rows 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "txinbox_inbox_rows", "txinbox_inbox_expired_rows"); err != nil {
		t.Error(err)
	}
	// The oldest row is 40 days old, 10 days past the retention.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if m := mf.GetMetric(); len(m) == 1 && m[0].GetGauge() != nil {
			got[mf.GetName()] = m[0].GetGauge().GetValue()
		}
	}
	day := (24 * time.Hour).Seconds()
	if a := got["txinbox_inbox_oldest_row_age_seconds"]; a < 40*day-60 || a > 40*day+60 {
		t.Errorf("oldest row age = %.0f s, want 40 days", a)
	}
	if a := got["txinbox_inbox_oldest_expired_age_seconds"]; a < 10*day-60 || a > 10*day+60 {
		t.Errorf("oldest expired age = %.0f s, want 10 days", a)
	}

	d.Close()
	// The scrape still succeeds, without the gauges, and counts the error.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP txinbox_inbox_gauge_errors_total Readings of the inbox gauges that failed.
# TYPE txinbox_inbox_gauge_errors_total counter
txinbox_inbox_gauge_errors_total 1
`), "txinbox_inbox_gauge_errors_total"); err != nil {
		t.Errorf("a scrape with the database gone: %v", err)
	}
}

// sqliteInbox opens a migrated SQLite inbox in a temporary directory and a
// processor of scope on it with a handler that does nothing.
func sqliteInbox(t *testing.T, scope string, hooks ...txinbox.Hook) (*sqlitestore.Driver, *txinbox.Processor[*sql.Tx]) {
	t.Helper()
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: scope, Hooks: hooks,
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return d, p
}
