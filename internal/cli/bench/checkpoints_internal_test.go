package bench

import (
	"context"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/testdb"
)

// TestPostgresCheckpoints: a CHECKPOINT is counted (the server reports it
// to its statistics when it completes, so the count is awaited).
func TestPostgresCheckpoints(t *testing.T) {
	pool := testdb.Require(t)
	ctx := context.Background()
	before := postgresCheckpoints(ctx, pool)
	if before < 0 {
		t.Fatal("postgresCheckpoints: the server's checkpoint count could not be read")
	}
	if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for n := postgresCheckpoints(ctx, pool); n <= before; n = postgresCheckpoints(ctx, pool) {
		if time.Now().After(deadline) {
			t.Fatalf("checkpoints %d after a CHECKPOINT, %d before", n, before)
		}
		time.Sleep(20 * time.Millisecond) // polling the server's statistics
	}
}
