package outboxprom_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txinbox/txinbox/metrics/prom/outboxprom"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// refuseB sends every row except those of topic "b", which it refuses for good.
type refuseB struct{}

func (refuseB) Send(_ context.Context, m *outbox.Message) (outbox.Receipt, error) {
	if m.Topic == "b" {
		return nil, outbox.Permanent(errors.New("partner b refuses"))
	}
	return nil, nil
}

func TestMetricsFromARelay(t *testing.T) {
	ctx := context.Background()
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "o.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	st := outboxlite.New(d)
	add := func(id, topic string) {
		t.Helper()
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Add(ctx, tx, outbox.Entry{Scope: "s", MessageID: id, Topic: topic, Payload: []byte(id)}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	add("1", "a")
	add("2", "a")
	add("3", "b")

	now := time.Now().Add(time.Hour) // the rows are an hour old at scrape
	m := outboxprom.New(outboxprom.Options{Stats: st.Stats, Now: func() time.Time { return now }})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)

	// Before the relay runs: three unsent rows, about an hour old.
	if got := testutil.ToFloat64(gauge(t, reg, "txinbox_outbox_unsent_rows")); got != 3 {
		t.Errorf("unsent before the relay = %v, want 3", got)
	}
	if age := testutil.ToFloat64(gauge(t, reg, "txinbox_outbox_oldest_unsent_age_seconds")); age < 3500 || age > 3700 {
		t.Errorf("oldest unsent age = %v s, want about 3600", age)
	}

	r, err := outbox.New(st, outbox.Config{Target: refuseB{}, OnSend: m.OnSend})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP txinbox_outbox_failed_rows Rows that failed for good and wait for a replay (the outbox's dead letters).
# TYPE txinbox_outbox_failed_rows gauge
txinbox_outbox_failed_rows 1
# HELP txinbox_outbox_oldest_unsent_age_seconds Age of the oldest unsent row; 0 when the backlog is empty.
# TYPE txinbox_outbox_oldest_unsent_age_seconds gauge
txinbox_outbox_oldest_unsent_age_seconds 0
# HELP txinbox_outbox_sends_total Outbox send attempts by result: sent (target confirmed), retried (will be tried again), failed (for good).
# TYPE txinbox_outbox_sends_total counter
txinbox_outbox_sends_total{result="failed",topic="b"} 1
txinbox_outbox_sends_total{result="sent",topic="a"} 2
# HELP txinbox_outbox_sent_rows Sent rows not purged yet.
# TYPE txinbox_outbox_sent_rows gauge
txinbox_outbox_sent_rows 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "txinbox_outbox_failed_rows",
		"txinbox_outbox_oldest_unsent_age_seconds", "txinbox_outbox_sends_total", "txinbox_outbox_sent_rows"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(gauge(t, reg, "txinbox_outbox_unsent_rows")); got != 0 {
		t.Errorf("unsent after the relay = %v, want 0", got)
	}
	if n := testutil.CollectAndCount(m, "txinbox_outbox_send_duration_seconds"); n != 2 {
		t.Errorf("latency series = %d, want 2 (sent, failed)", n)
	}
}

func TestStatsFailureDropsOnlyTheGauges(t *testing.T) {
	m := outboxprom.New(outboxprom.Options{Stats: func(context.Context) (outbox.Stats, error) {
		return outbox.Stats{}, sql.ErrConnDone
	}})
	m.OnSend(outbox.SendEvent{Message: &outbox.Message{Topic: "a"}, Result: outbox.Sent})
	if n := testutil.CollectAndCount(m); n != 2 {
		t.Errorf("series with a failing Stats = %d, want 2 (sends and latency only)", n)
	}
}

// gauge gathers reg and returns one single-series gauge's current value
// as a collector for testutil.ToFloat64.
func gauge(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: "copy"}, func() float64 {
				return mf.GetMetric()[0].GetGauge().GetValue()
			})
		}
	}
	t.Fatalf("metric %s not gathered", name)
	return nil
}

// TestStuckRelayShows: a relay whose claims fail (its table is gone) shows
// how long it has been failing and how many claims failed; once a claim
// works again the gauge is back to 0.
func TestStuckRelayShows(t *testing.T) {
	ctx := context.Background()
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "o.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var r *outbox.Relay
	now := time.Now()
	m := outboxprom.New(outboxprom.Options{Health: func() outbox.Health { return r.Health() },
		Now: func() time.Time { return now }})
	r, err = outbox.New(outboxlite.New(d), outbox.Config{Target: refuseB{}, OnSend: m.OnSend})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	exec := func(q string) {
		t.Helper()
		if _, err := d.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	exec(`ALTER TABLE txinbox_outbox RENAME TO moved_away`)
	// The relay dates its first failure by its own clock, somewhere
	// between before and after: the gauge, read a minute after after,
	// says between 60 s and 60 s plus the time the failures took.
	before := time.Now()
	for range 2 {
		if _, err := r.RunOnce(ctx); err == nil {
			t.Fatal("RunOnce without its table: no error")
		}
	}
	if err := r.Health().Err(); err == nil || !strings.Contains(err.Error(), "claiming or recording fails since") {
		t.Errorf("Health().Err() = %v", err)
	}
	after := time.Now()
	now = after.Add(time.Minute)
	slack := after.Sub(before).Seconds()
	if got := testutil.ToFloat64(gauge(t, reg, "txinbox_outbox_relay_failing_seconds")); got < 60 || got > 60+slack {
		t.Errorf("failing for %v s, want between 60 and %v", got, 60+slack)
	}
	want := `
# HELP txinbox_outbox_relay_batch_errors_total Claims or recordings of the relay that failed (database errors).
# TYPE txinbox_outbox_relay_batch_errors_total counter
txinbox_outbox_relay_batch_errors_total 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "txinbox_outbox_relay_batch_errors_total"); err != nil {
		t.Error(err)
	}
	exec(`ALTER TABLE moved_away RENAME TO txinbox_outbox`)
	if _, err := r.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(gauge(t, reg, "txinbox_outbox_relay_failing_seconds")); got != 0 || r.Health().Err() != nil {
		t.Errorf("after a claim that worked: failing for %v s, Health %v", got, r.Health().Err())
	}
}
