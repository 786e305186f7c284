package pgstore_test

import (
	"strings"
	"testing"

	"github.com/txinbox/txinbox/store"
)

// TestCheckpointsBadRow: a checkpoint row whose partition text is no
// number (written by hand) makes Checkpoints an error naming it, with no
// map: not partition 0 overwritten with the bad row's position.
func TestCheckpointsBadRow(t *testing.T) {
	d, ctx := guardedDriver(t)
	tx, err := d.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.SaveCheckpoint(ctx, store.Checkpoint{Scope: "s", Source: "invoices", Partition: 0, Position: 41}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Checkpoints(ctx, "s", "invoices"); err != nil || len(got) != 1 || got[0] != 41 {
		t.Fatalf("Checkpoints = %v, %v; want partition 0 at 41", got, err)
	}
	if _, err := d.Pool().Exec(ctx, d.Tables().Expand(
		"INSERT INTO {checkpoints} (scope, source, partition, position) VALUES ('s', 'invoices', 'three', 7)")); err != nil {
		t.Fatal(err)
	}
	got, err := d.Checkpoints(ctx, "s", "invoices")
	if err == nil || !strings.Contains(err.Error(), `"three"`) || got != nil {
		t.Errorf("Checkpoints with a row of partition \"three\" = %v, %v; want no map and an error naming it", got, err)
	}
}
