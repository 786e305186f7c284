package otel_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/txinbox/txinbox"
	txotel "github.com/txinbox/txinbox/metrics/otel"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func TestBatchSpansWithOutcomes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "i.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s", Hooks: []txinbox.Hook{txotel.New(tp)},
		Handler: func(_ context.Context, _ *sql.Tx, m *txinbox.Message) error {
			if m.ID == "bad" {
				return errors.New("refused")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Process(ctx, []*txinbox.Message{{ID: "a"}, {ID: "a"}, {ID: "bad"}}); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "txinbox.batch" {
		t.Fatalf("spans = %v", spans)
	}
	var outcomes []string
	for _, e := range spans[0].Events() {
		for _, a := range e.Attributes {
			if a.Key == "txinbox.outcome" {
				outcomes = append(outcomes, a.Value.AsString())
			}
		}
	}
	if len(outcomes) != 3 || outcomes[0] != "processed" || outcomes[1] != "duplicate" || outcomes[2] != "retry" {
		t.Errorf("outcome events = %v", outcomes)
	}
	redone := false
	handlerMS, commitMS := -1.0, -1.0
	for _, a := range spans[0].Attributes() {
		switch a.Key {
		case "txinbox.batch.redone":
			redone = a.Value.AsBool()
		case "txinbox.batch.handler_ms":
			handlerMS = a.Value.AsFloat64()
		case "txinbox.batch.commit_ms":
			commitMS = a.Value.AsFloat64()
		}
	}
	if !redone {
		t.Error("the batch span does not say it was redone")
	}
	// Handlers ran and the batch committed: both took some time.
	if handlerMS <= 0 || commitMS <= 0 {
		t.Errorf("txinbox.batch.handler_ms = %v, txinbox.batch.commit_ms = %v; want both > 0 (-1: missing)", handlerMS, commitMS)
	}
}
