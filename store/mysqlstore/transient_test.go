package mysqlstore_test

import (
	"context"
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// TestLockWaitTimeoutIsRetried: a handler whose statement waits for a
// row another transaction holds gets a lock wait timeout (1205), which
// IsTransient reports: the processor runs the whole batch again, and once
// the row is free every message commits once. Its neighbours are not
// failed for it.
func TestLockWaitTimeoutIsRetried(t *testing.T) {
	ctx := context.Background()
	url := mysqltest.NewDatabase(t)
	// The server's session variable, set on each connection: one second.
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db := mysqltest.Open(t, url+sep+"innodb_lock_wait_timeout=1", 8)
	d, err := mysqlstore.New(db, mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE effects (id VARBINARY(255) NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE hot (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB", "INSERT INTO hot VALUES (1, 0)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	blocker, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blocker.Exec("UPDATE hot SET n = n WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	var timeouts atomic.Int32
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s", TransientRetries: 3,
		Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
			if _, err := tx.ExecContext(ctx, "INSERT INTO effects VALUES (?)", m.ID); err != nil {
				return err
			}
			if m.ID != "b" {
				return nil
			}
			_, err := tx.ExecContext(ctx, "UPDATE hot SET n = n + 1 WHERE id = 1")
			if err != nil && timeouts.Add(1) == 1 {
				if !d.IsTransient(err) {
					t.Errorf("IsTransient(%v) = false", err)
				}
				_ = blocker.Rollback() // the row is free for the next run
			}
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Process(ctx, []*txinbox.Message{{ID: "a", Payload: []byte("1")}, {ID: "b", Payload: []byte("2")}, {ID: "c", Payload: []byte("3")}})
	if err != nil {
		t.Fatalf("Process: %v (a lock wait timeout is retryable)", err)
	}
	for _, r := range res {
		if r.Outcome != txinbox.Processed {
			t.Errorf("%v %v, want processed", r.Outcome, r.Err)
		}
	}
	var effects, n int
	if err := db.QueryRow("SELECT (SELECT count(*) FROM effects), (SELECT n FROM hot WHERE id = 1)").Scan(&effects, &n); err != nil {
		t.Fatal(err)
	}
	if effects != 3 || n != 1 || timeouts.Load() != 1 {
		t.Errorf("%d effects, hot.n = %d, %d timeouts; want 3, 1, 1", effects, n, timeouts.Load())
	}
}
