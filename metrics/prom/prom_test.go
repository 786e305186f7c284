package prom_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func TestMetricsCountOutcomes(t *testing.T) {
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "i.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	m := prom.New(prom.Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "billing", Hooks: []txinbox.Hook{m},
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
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
