package sqlitestore_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestCheckpointsByPartitionNumber: a checkpoint saved for partition 3 is
// kept as the text "3" (the column is text) and read back keyed by the
// number 3; a row whose text is no partition number (written by hand) is
// an error naming it, not partition 0.
func TestCheckpointsByPartitionNumber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := harness.New(t)
	sd := d.(*sqlitestore.Driver)
	tx, err := d.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.SaveCheckpoint(ctx, store.Checkpoint{Scope: "s", Source: "invoices", Partition: 3, Position: 41}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var text string
	if err := sd.DB().QueryRow(sd.Tables().Expand("SELECT partition FROM {checkpoints} WHERE scope = 's'")).Scan(&text); err != nil || text != "3" {
		t.Fatalf("partition 3 kept as %q, %v; want \"3\"", text, err)
	}
	got, err := d.Checkpoints(ctx, "s", "invoices")
	if err != nil || len(got) != 1 || got[3] != 41 {
		t.Fatalf("Checkpoints = %v, %v; want partition 3 at 41", got, err)
	}
	insertRow(t, sd.DB(), sd.Tables().Expand("INSERT INTO {checkpoints} (scope, source, partition, position, updated_at) VALUES ('s', 'invoices', 'three', 7, '2026-01-01T00:00:00Z')"))
	if got, err := d.Checkpoints(ctx, "s", "invoices"); err == nil || !strings.Contains(err.Error(), `"three"`) {
		t.Errorf("Checkpoints with a row of partition \"three\" = %v, %v; want an error naming it", got, err)
	}
}

func insertRow(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	if _, err := db.Exec(query); err != nil {
		t.Fatal(err)
	}
}
