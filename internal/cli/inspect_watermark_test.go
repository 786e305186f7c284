package cli_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestInspectOffsetWatermark: with offsets as the inbox no inbox row is
// kept, and inspect says what the partition watermark tells of an offset
// key: processed at or below it, not yet past it; forget says why it
// cannot re-admit one.
func TestInspectOffsetWatermark(t *testing.T) {
	db := filepath.Join(t.TempDir(), "inbox.db")
	if _, errs, code := run(t, "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: %s", errs)
	}
	d, err := sqlitestore.Open(db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "kafka",
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	cp := txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "invoices", Partition: 3}, Saved: -1}
	var msgs []*txinbox.Message
	for o := range int64(5) {
		msgs = append(msgs, &txinbox.Message{ID: fmt.Sprint("invoices/3/", o), Payload: []byte("x")})
		cp.Positions = append(cp.Positions, o)
	}
	if _, _, err := p.ProcessOffsets(context.Background(), msgs, cp); err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, tc := range []struct {
		id, want string
		code     int
	}{
		{"invoices/3/2", "covered by the partition watermark 4", 0},
		{"invoices/3/7", "not processed yet", 1},
		{"invoices/4/2", "unknown: never processed", 1},
	} {
		out, errs, code := run(t, "inspect", "--db", db, "--scope", "kafka", tc.id)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("inspect %s: exit %d, %q %q; want %d and %q", tc.id, code, out, errs, tc.code, tc.want)
		}
	}
	_, errs, code := run(t, "forget", "--db", db, "--scope", "kafka", "--reason", "test", "invoices/3/2")
	if code != 1 || !strings.Contains(errs, "no row to forget: processed (covered by the partition watermark 4") {
		t.Errorf("forget of a record under the watermark: exit %d, %q", code, errs)
	}
}
