package kafka_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/kafka"
)

// TestLagAndReady: a consumer is ready only while Run's client is in the
// group; its lag is per partition, zero once every offset committed, read
// over Run's client while it runs and over a client of its own after.
func TestLagAndReady(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newCluster(t), 2)
	f.produce(ids("lag", 20), 2)
	ctx := context.Background()
	r := f.start(f.consumerConfig())
	waitFor(t, 30*time.Second, "ready", func() (bool, string) {
		err := r.c.Ready(ctx)
		return err == nil, errString(err)
	})
	f.waitCommitted(30 * time.Second)
	zero := []source.Lag{{Partition: f.topic + "/0"}, {Partition: f.topic + "/1"}}
	checkLag(t, r.c, zero)
	r.stop()
	if err := r.c.Ready(ctx); err == nil {
		t.Error("a stopped consumer is ready")
	}
	checkLag(t, r.c, zero)
}

func checkLag(t *testing.T, c *kafka.Consumer, want []source.Lag) {
	t.Helper()
	lags, err := c.Lag(context.Background())
	if err != nil || len(lags) != len(want) {
		t.Fatalf("Lag = %v, %v; want %v", lags, err, want)
	}
	for i := range want {
		if lags[i] != want[i] {
			t.Errorf("Lag = %v, want %v", lags, want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestRedeliveryHorizons reads retention.ms of each topic of a header-keyed
// consumer (a negative one keeps records for ever); an offset-keyed one
// has none, its records being covered by the watermarks, and logs why.
func TestRedeliveryHorizons(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newCluster(t), 1)
	ctx := context.Background()
	sixty, never := "5184000000", "-1"
	for topic, retention := range map[string]*string{"invoices-" + f.group: &sixty, "ledger-" + f.group: &never} {
		if _, err := f.adm.CreateTopic(ctx, 1, -1, map[string]*string{"retention.ms": retention}, topic); err != nil {
			t.Fatal(err)
		}
	}
	cfg := f.consumerConfig()
	cfg.Topics = []string{"invoices-" + f.group, "ledger-" + f.group}
	c, err := newConsumer(f.driver, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := c.RedeliveryHorizons(ctx)
	want := []source.Horizon{
		{What: `Kafka topic "invoices-` + f.group + `"`, Figure: "retention.ms=5184000000 (60d)", Within: 60 * 24 * time.Hour},
		{What: `Kafka topic "ledger-` + f.group + `"`, Figure: "retention.ms=-1", Forever: true},
	}
	if err != nil || len(hs) != 2 || hs[0] != want[0] || hs[1] != want[1] {
		t.Errorf("RedeliveryHorizons = %+v, %v; want %+v", hs, err, want)
	}
	cfg.Key = kafka.OffsetKey
	var log strings.Builder
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	if c, err = newConsumer(f.driver, cfg); err != nil {
		t.Fatal(err)
	}
	if hs, err := c.RedeliveryHorizons(ctx); err != nil || len(hs) != 0 {
		t.Errorf("offset-keyed: RedeliveryHorizons = %+v, %v; want none", hs, err)
	}
	if !strings.Contains(log.String(), "Kafka retention not checked: offset-keyed records stay covered") {
		t.Errorf("offset-keyed: RedeliveryHorizons logged %q, want why the retention is not checked", log.String())
	}
}
