package runner

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

type ackRecorder []txinbox.AckInfo

func (h *ackRecorder) OnAck(_ context.Context, info txinbox.AckInfo) { *h = append(*h, info) }

func TestReportAckFillsScopeAndDuration(t *testing.T) {
	hook := &ackRecorder{}
	proc := newProcessor(t, txinbox.Config[*sql.Tx]{Scope: "billing", Hooks: []txinbox.Hook{hook}})
	lost := errors.New("connection closed")
	start := time.Now().Add(-time.Millisecond) // the ack began at least 1 ms ago
	ReportAck(context.Background(), proc, "invoices", 10, start, nil)
	ReportAck(context.Background(), proc, "invoices", 3, start, lost)
	if len(*hook) != 2 {
		t.Fatalf("hook got %d acks, want 2", len(*hook))
	}
	for i, want := range []txinbox.AckInfo{{Scope: "billing", Source: "invoices", Messages: 10},
		{Scope: "billing", Source: "invoices", Messages: 3, Err: lost}} {
		got := (*hook)[i]
		if got.Duration < time.Millisecond {
			t.Errorf("ack %d: Duration %v, want >= 1ms (time since start)", i, got.Duration)
		}
		got.Duration = 0
		if got != want {
			t.Errorf("ack %d = %+v, want %+v", i, got, want)
		}
	}
}

// newProcessor returns a processor over a SQLite inbox of its own, with a
// handler that does nothing unless cfg has one, and scope "s" unless cfg
// has one.
func newProcessor(t *testing.T, cfg txinbox.Config[*sql.Tx]) *txinbox.Processor[*sql.Tx] {
	t.Helper()
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "i.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if cfg.Scope == "" {
		cfg.Scope = "s"
	}
	if cfg.Handler == nil && cfg.BatchHandler == nil {
		cfg.Handler = func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }
	}
	proc, err := txinbox.NewProcessor(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return proc
}
