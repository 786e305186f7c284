package pgstore_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgstore"
)

// The purge lock must exclude a second purger and be gone after release,
// or after its process exits, both directly and behind PgBouncer in
// transaction pooling, where consecutive statements of one client run on
// different server connections: a session lock taken on one and released
// on another stayed held on the first, idle, connection, and every later
// purger skipped its rounds.

func TestPurgeLockDirect(t *testing.T) {
	testPurgeLock(t, testdb.URL())
}

func TestPurgeLockBehindPgBouncer(t *testing.T) {
	testPurgeLock(t, testdb.RequirePgBouncer(t))
}

func TestPurgeLockFreedWhenProcessExitsDirect(t *testing.T) {
	testPurgeLockProcessExit(t, testdb.URL())
}

func TestPurgeLockFreedWhenProcessExitsBehindPgBouncer(t *testing.T) {
	testPurgeLockProcessExit(t, testdb.RequirePgBouncer(t))
}

func testPurgeLock(t *testing.T, url string) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := testdb.Require(t) // the server itself, never the pooler
	schema := testdb.NewSchema(t, admin)
	a, b := lockDriver(t, url, schema), lockDriver(t, url, schema)
	key := purgeLockKey(t, admin, schema, a)

	releaseA, ok, err := a.PurgeLock(ctx)
	if err != nil || !ok {
		t.Fatalf("A's PurgeLock = %v, %v; want the lock", ok, err)
	}
	releaseA = releaseOnce(t, releaseA)
	wantPurgeLockHeld(t, admin, key)
	// A's pool keeps working while the lock's connection is held.
	for range 5 {
		if err := a.Ping(ctx); err != nil {
			t.Fatalf("A's Ping while holding the lock: %v", err)
		}
	}
	if releaseB, ok, err := b.PurgeLock(ctx); err != nil || ok {
		if ok {
			releaseB()
		}
		t.Fatalf("B's PurgeLock while A holds it = %v, %v; want false", ok, err)
	}
	releaseA()
	wantNoPurgeLock(t, admin, key, 0)
	releaseB, ok, err := b.PurgeLock(ctx)
	if err != nil || !ok {
		t.Fatalf("B's PurgeLock after A's release = %v, %v; want the lock", ok, err)
	}
	releaseB = releaseOnce(t, releaseB)
	releaseB()
	wantNoPurgeLock(t, admin, key, 0)
}

func testPurgeLockProcessExit(t *testing.T, url string) {
	t.Parallel()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	d := lockDriver(t, url, schema)
	key := purgeLockKey(t, admin, schema, d)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envPurgeLockChild+"="+url+"|"+schema)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "locked") {
		t.Fatalf("child: %v: %s", err, out)
	}
	// The server frees the lock when it sees the connection gone, a
	// moment after the exit.
	wantNoPurgeLock(t, admin, key, 10*time.Second)
	release, ok, err := d.PurgeLock(context.Background())
	if err != nil || !ok {
		t.Fatalf("PurgeLock after the holder exited = %v, %v; want the lock", ok, err)
	}
	release()
}

const envPurgeLockChild = "TXINBOX_PGSTORE_PURGELOCK_CHILD"

// runPurgeLockChild is the child process of testPurgeLockProcessExit: it
// takes the purge lock of the inbox that the environment names
// (URL|schema), says "locked", and exits without releasing it.
func runPurgeLockChild() {
	desc := os.Getenv(envPurgeLockChild)
	if desc == "" {
		return
	}
	url, schema, _ := strings.Cut(desc, "|")
	pool, err := pgxpool.New(context.Background(), url)
	if err == nil {
		var d *pgstore.Driver
		if d, err = pgstore.New(pool, pgstore.Options{Schema: schema}); err == nil {
			var ok bool
			_, ok, err = d.PurgeLock(context.Background())
			if err == nil && !ok {
				err = fmt.Errorf("lock busy")
			}
		}
	}
	if err != nil {
		fmt.Println("child:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "locked")
	w.Flush()
	os.Exit(0)
}

// lockDriver opens a driver of the inbox in schema on url, through its own
// pool. The schema goes in Options.Schema: PgBouncer refuses search_path
// as a startup parameter.
func lockDriver(t *testing.T, url, schema string) *pgstore.Driver {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	d, err := pgstore.New(pool, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// releaseOnce returns release, to be called once: by the test, else at
// cleanup, before the pools close (a pool waits for its held connections).
func releaseOnce(t *testing.T, release func()) func() {
	var once sync.Once
	f := func() { once.Do(release) }
	t.Cleanup(f)
	return f
}

// purgeLockKey is the advisory lock key of the purge of d, whose inbox is
// in schema, as PurgeLock computes it.
func purgeLockKey(t *testing.T, admin *pgxpool.Pool, schema string, d *pgstore.Driver) int64 {
	t.Helper()
	var key int64
	if err := admin.QueryRow(context.Background(), `SELECT hashtextextended('txinbox.purge.' || $1 || '.' || $2, 0)`,
		schema, d.Tables().Prefix).Scan(&key); err != nil {
		t.Fatal(err)
	}
	return key
}

// purgeLockHolder is a session holding the advisory lock key.
type purgeLockHolder struct {
	pid         int32
	state       string
	xminHeld    bool // backend_xmin is set: vacuum is held back
	xidAssigned bool
}

// purgeLockHolders reads the server's pg_locks for key.
func purgeLockHolders(t *testing.T, admin *pgxpool.Pool, key int64) []purgeLockHolder {
	t.Helper()
	rows, err := admin.Query(context.Background(), `SELECT l.pid, coalesce(a.state, ''),
		a.backend_xmin IS NOT NULL, a.backend_xid IS NOT NULL
	FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
	WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
	  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	  AND (l.classid::int8 << 32 | l.objid::int8) = $1`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var hs []purgeLockHolder
	for rows.Next() {
		var h purgeLockHolder
		if err := rows.Scan(&h.pid, &h.state, &h.xminHeld, &h.xidAssigned); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return hs
}

// wantPurgeLockHeld checks that one session holds the lock, idle in its
// transaction without a snapshot or a transaction id, which would hold
// back vacuum for as long as the purge runs.
func wantPurgeLockHeld(t *testing.T, admin *pgxpool.Pool, key int64) {
	t.Helper()
	hs := purgeLockHolders(t, admin, key)
	if len(hs) != 1 {
		t.Fatalf("holders of the purge lock = %+v; want one", hs)
	}
	if h := hs[0]; h.xminHeld || h.xidAssigned {
		t.Errorf("the purge lock's session %+v holds a snapshot or a transaction id", h)
	}
}

// wantNoPurgeLock fails unless nobody holds the lock on the server, within
// wait.
func wantNoPurgeLock(t *testing.T, admin *pgxpool.Pool, key int64, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		hs := purgeLockHolders(t, admin, key)
		if len(hs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the purge lock is still held on the server by %+v", hs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A server's idle_in_transaction_session_timeout must not end the purge
// lock's session while a long purge runs (the lock would go, and another
// purger start): the lock's transaction turns it off for itself.
func TestPurgeLockOutlivesIdleInTransactionTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	cfg, err := pgxpool.ParseConfig(testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "100ms"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	d, err := pgstore.New(pool, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	key := purgeLockKey(t, admin, schema, d)
	release, ok, err := d.PurgeLock(ctx)
	if err != nil || !ok {
		t.Fatalf("PurgeLock = %v, %v; want the lock", ok, err)
	}
	release = releaseOnce(t, release)
	// Waiting is the point: the timeout would have fired several times.
	time.Sleep(500 * time.Millisecond)
	wantPurgeLockHeld(t, admin, key)
	release()
	wantNoPurgeLock(t, admin, key, 0)
}

// A purger whose context is cancelled gets an error, and leaves no lock.
func TestPurgeLockCancelled(t *testing.T) {
	t.Parallel()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	d := lockDriver(t, testdb.URL(), schema)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if release, ok, err := d.PurgeLock(ctx); err == nil {
		if ok {
			release()
		}
		t.Fatalf("PurgeLock with a cancelled context = %v, nil; want an error", ok)
	}
	wantNoPurgeLock(t, admin, purgeLockKey(t, admin, schema, d), 0)
	release, ok, err := d.PurgeLock(context.Background())
	if err != nil || !ok {
		t.Fatalf("PurgeLock after a cancelled one = %v, %v; want the lock", ok, err)
	}
	release()
}
