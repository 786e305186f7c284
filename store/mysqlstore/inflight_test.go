package mysqlstore_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// lockIn begins a batch transaction on d and takes the in-flight locks
// of keys.
func lockIn(t *testing.T, ctx context.Context, d *mysqlstore.Driver, keys ...store.Key) (store.Tx[*sql.Tx], []bool) {
	t.Helper()
	tx, err := d.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tx.(store.InFlightLocker).TryLockKeys(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	return tx, got
}

// free reports whether another transaction can take k's lock now (and
// gives it back).
func free(t *testing.T, d *mysqlstore.Driver, k store.Key) bool {
	t.Helper()
	ctx := context.Background()
	tx, got := lockIn(t, ctx, d, k)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	return got[0]
}

// TestInFlightLocksReleased: the named locks behind store.InFlightLocker
// are the session's, not the transaction's, so the store releases them
// itself: another transaction finds a key locked while the batch holding
// it runs, and free once it ended, however it ended (commit, rollback, a
// handler's tx.Rollback, its context ended, its connection killed). A
// key twice in a batch is freed too (GET_LOCK counts); a connection the
// batch gave back to the pool holds no lock; the locks of one database
// or table prefix are not another's.
func TestInFlightLocksReleased(t *testing.T) {
	url := mysqltest.NewDatabase(t)
	db := mysqltest.Open(t, url, 8)
	d, err := mysqlstore.New(db, mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	// outside asks from a pool of its own: a connection of d's pool that
	// still held a lock would hold it while it waits there idle.
	outside, err := mysqlstore.New(mysqltest.Open(t, url, 2), mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, other := txinboxKey("s", "k"), txinboxKey("s", "other")
	ends := map[string]func(context.CancelFunc, store.Tx[*sql.Tx]) error{
		"commit":             func(_ context.CancelFunc, tx store.Tx[*sql.Tx]) error { return tx.Commit(context.Background()) },
		"rollback":           func(_ context.CancelFunc, tx store.Tx[*sql.Tx]) error { return tx.Rollback(context.Background()) },
		"handler's rollback": func(_ context.CancelFunc, tx store.Tx[*sql.Tx]) error { _ = tx.Tx().Rollback(); return nil },
		"context ended": func(cancel context.CancelFunc, _ store.Tx[*sql.Tx]) error {
			cancel()
			time.Sleep(200 * time.Millisecond)
			return nil
		},
		"connection killed":   killConn(t, db),
		"commit, key twice":   nil, // below
		"rollback, key twice": nil,
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			keys := []store.Key{k, other}
			if end == nil {
				keys = []store.Key{k, k, other}
				end = ends["commit"]
				if name == "rollback, key twice" {
					end = ends["rollback"]
				}
			}
			tx, got := lockIn(t, ctx, d, keys...)
			if slices.Contains(got, false) {
				t.Fatalf("locks %v: want all taken", got)
			}
			if free(t, outside, k) {
				t.Fatal("another transaction took the lock of a key that a running batch holds")
			}
			if err := end(cancel, tx); err != nil {
				t.Fatal(err)
			}
			_ = tx.Rollback(context.Background()) // ends what is left, gives the connection back
			if !free(t, outside, k) || !free(t, outside, other) {
				t.Errorf("a key's lock is still held after the batch ended (%s)", name)
			}
		})
	}
	t.Run("other prefix", func(t *testing.T) {
		d2, err := mysqlstore.New(db, mysqlstore.Options{TablePrefix: "other_"})
		if err != nil {
			t.Fatal(err)
		}
		tx, _ := lockIn(t, context.Background(), d, k)
		defer tx.Rollback(context.Background()) //nolint:errcheck
		if !free(t, d2, k) {
			t.Error("the same key in another prefix's inbox was locked")
		}
	})
}

// killConn ends a batch by killing its connection from another one.
func killConn(t *testing.T, db *sql.DB) func(context.CancelFunc, store.Tx[*sql.Tx]) error {
	return func(_ context.CancelFunc, tx store.Tx[*sql.Tx]) error {
		var id int64
		if err := tx.Tx().QueryRow("SELECT CONNECTION_ID()").Scan(&id); err != nil {
			return err
		}
		if _, err := db.Exec("KILL CONNECTION ?", id); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
		return nil
	}
}

// TestPoolDropsAConnectionHoldingLocks: a connection that still holds a
// named lock of a batch (its release failed) is not handed out again:
// the pool closes it, which frees its locks on the server.
func TestPoolDropsAConnectionHoldingLocks(t *testing.T) {
	db := mysqltest.Open(t, mysqltest.NewDatabase(t), 1)
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var first, again int64
	if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&first); err != nil {
		t.Fatal(err)
	}
	if err := mysqlstore.NoteLockHeld(c, "x"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again == first {
		t.Errorf("the pool handed out again connection %d, which holds a batch's lock", first)
	}
}
