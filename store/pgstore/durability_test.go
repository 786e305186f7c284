package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// durabilityOf reads the durability on a pool of u.
func durabilityOf(t *testing.T, u string) store.Durability {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	du, err := d.Durability(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return du
}

// riskNames are the names of the risks of du.
func riskNames(du store.Durability) []string {
	var out []string
	for _, r := range du.Risks {
		out = append(out, r.Setting)
	}
	return out
}

// TestDurabilityDefaults: PostgreSQL's defaults (the test server's) lose
// nothing acked; no standby replicates from it.
func TestDurabilityDefaults(t *testing.T) {
	testdb.Require(t)
	du := durabilityOf(t, testdb.URL())
	if len(du.Risks) != 0 || len(du.Unread) != 0 {
		t.Fatalf("risks %v, unread %v on the defaults", riskNames(du), du.Unread)
	}
	if !strings.Contains(du.Crash, "loses no acked message") || !strings.Contains(du.Failover, "no standby replicates") {
		t.Errorf("crash %q, failover %q", du.Crash, du.Failover)
	}
}

// TestDurabilitySynchronousCommitOff: synchronous_commit=off set for the
// database, or for the role, is the value the store's connections get,
// and a risk naming the setting, the window it loses and the ALTER ROLE
// that fixes it.
func TestDurabilitySynchronousCommitOff(t *testing.T) {
	admin := testdb.Require(t)
	ctx := context.Background()
	db := testdb.NewDatabase(t, admin)
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+db+" SET synchronous_commit = off"); err != nil {
		t.Fatal(err)
	}
	role := db + "_role" // unique as the database is
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN; ALTER ROLE "+role+" SET synchronous_commit = off"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(ctx, "DROP ROLE IF EXISTS "+role) }) //nolint:errcheck // best effort
	byRole := strings.Replace(testdb.URL(), "postgres@", role+"@", 1)
	if byRole == testdb.URL() {
		t.Skip("the test database's URL names no user postgres@ to replace")
	}
	for what, u := range map[string]string{"database": testdb.WithDatabase(t, testdb.URL(), db), "role": byRole} {
		du := durabilityOf(t, u)
		if got := riskNames(du); len(got) != 1 || got[0] != "synchronous_commit=off" {
			t.Fatalf("ALTER %s SET synchronous_commit = off: risks %v", what, got)
		}
		r := du.Risks[0]
		for _, want := range []string{"crash of PostgreSQL", "600ms", "already acked"} {
			if !strings.Contains(r.Loses, want) {
				t.Errorf("%s: %q does not say %q", what, r.Loses, want)
			}
		}
		if !strings.Contains(r.Fix, "ALTER ROLE") || !strings.Contains(du.Crash, "last 600ms") {
			t.Errorf("%s: fix %q, crash %q", what, r.Fix, du.Crash)
		}
	}
}

// TestDurabilityFsyncAndFullPageWrites: on a throwaway cluster (started
// with fsync=off), fsync=off is a risk; full_page_writes=off, set with
// ALTER SYSTEM and a reload, is a second one.
func TestDurabilityFsyncAndFullPageWrites(t *testing.T) {
	c := testdb.StartCluster(t)
	du := durabilityOf(t, c.URL())
	if got := riskNames(du); len(got) != 1 || got[0] != "fsync=off" {
		t.Fatalf("risks %v, want fsync=off", got)
	}
	if !strings.Contains(du.Risks[0].Fix, "fsync = on") || !strings.Contains(du.Crash, "power loss") {
		t.Errorf("fix %q, crash %q", du.Risks[0].Fix, du.Crash)
	}
	pool := c.Pool(t, 2)
	if _, err := pool.Exec(context.Background(), "ALTER SYSTEM SET full_page_writes = off"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), "SELECT pg_reload_conf(), pg_sleep(0.2)"); err != nil {
		t.Fatal(err)
	}
	du = durabilityOf(t, c.URL())
	if got := riskNames(du); len(got) != 2 || got[1] != "full_page_writes=off" {
		t.Fatalf("risks %v, want fsync=off and full_page_writes=off", got)
	}
	if !strings.Contains(du.Risks[1].Loses, "torn page") {
		t.Errorf("full_page_writes: %q", du.Risks[1].Loses)
	}
}
