package prom_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/metrics/prom"
)

func TestMetricsCountOutcomes(t *testing.T) {
	ctx := context.Background()
	m := prom.New(prom.Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	_, p := sqliteInbox(t, "billing", m)
	msgs := []*txinbox.Message{{ID: "a", Source: "invoices", Payload: []byte("1")}, {ID: "a", Source: "invoices", Payload: []byte("1")},
		{ID: "a", Source: "invoices", Payload: []byte("2")}}
	if _, err := p.Process(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP txinbox_duplicates_total Redeliveries skipped because the (scope, id) was already processed with the same payload.
# TYPE txinbox_duplicates_total counter
txinbox_duplicates_total{scope="billing",source="invoices"} 1
# HELP txinbox_messages_total Messages by outcome: processed, duplicate, drift, retry, dead_lettered.
# TYPE txinbox_messages_total counter
txinbox_messages_total{outcome="drift",scope="billing",source="invoices"} 1
txinbox_messages_total{outcome="duplicate",scope="billing",source="invoices"} 1
txinbox_messages_total{outcome="processed",scope="billing",source="invoices"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "txinbox_messages_total", "txinbox_duplicates_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m, "txinbox_batch_size"); n != 1 {
		t.Errorf("batch_size series = %d", n)
	}
}

func TestMetricsObserveHandlerCommitAndAckLatency(t *testing.T) {
	ctx := context.Background()
	m := prom.New(prom.Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	_, p := sqliteInbox(t, "billing", m)
	msgs := func() []*txinbox.Message {
		return []*txinbox.Message{{ID: "a", Source: "invoices", Payload: []byte("1")}, {ID: "b", Source: "invoices", Payload: []byte("2")}}
	}
	for range 2 { // new, then duplicates only: no handler runs
		if _, err := p.Process(ctx, msgs()); err != nil {
			t.Fatal(err)
		}
	}
	p.ReportAck(ctx, txinbox.AckInfo{Source: "invoices", Messages: 2, Duration: 3 * time.Millisecond})
	p.ReportAck(ctx, txinbox.AckInfo{Source: "invoices", Messages: 2, Duration: time.Millisecond, Err: errors.New("channel closed")})
	p.ReportAck(ctx, txinbox.AckInfo{Source: "orders", Messages: 5, Duration: time.Millisecond})

	for name, want := range map[string]map[string]float64{
		"txinbox_handler_duration_seconds": {"": 1},
		"txinbox_commit_duration_seconds":  {"result=committed": 2},
		"txinbox_batch_duration_seconds":   {"result=committed": 2},
		"txinbox_ack_duration_seconds":     {"result=ok,source=invoices": 1, "result=failed,source=invoices": 1, "result=ok,source=orders": 1},
		"txinbox_acked_messages_total":     {"source=invoices": 2, "source=orders": 5},
	} {
		if got := counts(t, reg, name); !maps.Equal(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

// counts returns the series of one metric family by their labels
// ("k=v,..."), each with its count: a histogram's observations, a
// counter's value.
func counts(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := strings.Join(labels, ",")
			if h := mt.GetHistogram(); h != nil {
				out[key] = float64(h.GetSampleCount())
			} else {
				out[key] = mt.GetCounter().GetValue()
			}
		}
	}
	return out
}
