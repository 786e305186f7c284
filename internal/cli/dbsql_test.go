package cli_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// TestDatabaseSQLStoreURL: --db with txinbox_store=database/sql runs the
// admin commands on pgdbstore (migrate, status, dlq, inspect, purge) and
// says so; the txinbox_* parameters are checked and refused by name.
func TestDatabaseSQLStoreURL(t *testing.T) {
	t.Parallel()
	schema := testdb.NewSchema(t, testdb.Require(t))
	url := pgdbtest.URL(schema) + "&txinbox_store=database/sql"
	if !strings.Contains(pgdbtest.URL(schema), "?") {
		t.Skip("the test database URL has no query")
	}
	if out, errs, code := run(t, "migrate", "--db", url); code != 0 || !strings.Contains(out, "txinbox_store=database/sql") {
		t.Fatalf("migrate: %d %q %q", code, out, errs)
	}
	// Produce a processed message and a dead letter through pgdbstore.
	db := pgdbtest.Open(t, "pgx", schema, 2)
	d, err := pgdbstore.New(db, pgdbstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s",
		Handler: func(_ context.Context, _ *sql.Tx, m *txinbox.Message) error {
			if m.ID == "poison" {
				return txinbox.Permanent(context.DeadlineExceeded)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*txinbox.Message{{ID: "a", Payload: []byte("1")}, {ID: "poison"}} {
		if _, err := p.Process(context.Background(), []*txinbox.Message{m}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	var st map[string]any
	if out, errs, code := run(t, "status", "--db", url, "--json"); code != 0 || json.Unmarshal([]byte(out), &st) != nil ||
		st["inbox"] != 1.0 || st["dead_letters"] != 1.0 {
		t.Errorf("status: %d %q %q", code, out, errs)
	}
	if out, errs, code := run(t, "dlq", "list", "--db", url, "--json"); code != 0 || !strings.Contains(out, `"poison"`) {
		t.Errorf("dlq list: %d %q %q", code, out, errs)
	}
	if out, errs, code := run(t, "inspect", "--db", url, "--scope", "s", "a"); code != 0 || !strings.Contains(out, `"processed"`) {
		t.Errorf("inspect: %d %q %q", code, out, errs)
	}
	if out, errs, code := run(t, "purge", "--dry-run", "--db", url); code != 0 {
		t.Errorf("purge --dry-run: %d %q %q", code, out, errs)
	}
	base := pgdbtest.URL(schema)
	for _, tc := range []struct{ param, want string }{
		{"txinbox_store=mysql", `txinbox_store="mysql": not a store`},
		{"txinbox_store=database/sql&txinbox_driver=pq", "lib/pq is not built into the txinbox binary"},
		{"txinbox_driver=pgx", "txinbox_driver applies to txinbox_store=database/sql only"},
		{"txinbox_store=database/sql&txinbox_readonly_guard=maybe", "on or off"},
		{"txinbox_stor=database/sql", "unknown parameter txinbox_stor"},
	} {
		if _, errs, code := run(t, "status", "--db", base+"&"+tc.param); code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.param, code, errs, tc.want)
		}
	}
	if _, errs, code := run(t, "status", "--db", "host=127.0.0.1 txinbox_store=database/sql"); code == 0 || !strings.Contains(errs, "postgres:// URL only") {
		t.Errorf("key=value with txinbox_store: exit %d, stderr %q", code, errs)
	}
}

// TestDatabaseSQLStoreBehindTransactionPooler: through PgBouncer's
// transaction pool, txinbox_store=database/sql is refused when it
// connects (status) and by migrate while the read-only guard is on,
// naming txinbox_readonly_guard=off, and works with it off.
func TestDatabaseSQLStoreBehindTransactionPooler(t *testing.T) {
	t.Parallel()
	u := testdb.WithDatabase(t, testdb.RequirePgBouncer(t), testdb.NewDatabase(t, testdb.Require(t))) + "&txinbox_store=database/sql"
	for _, cmd := range []string{"migrate", "status"} {
		if _, errs, code := run(t, cmd, "--db", u); code == 0 || !strings.Contains(errs, "txinbox_readonly_guard=off") {
			t.Errorf("%s with the guard on: exit %d, stderr %q; want a refusal naming txinbox_readonly_guard=off", cmd, code, errs)
		}
		if out, errs, code := run(t, cmd, "--db", u+"&txinbox_readonly_guard=off"); code != 0 {
			t.Errorf("%s with txinbox_readonly_guard=off: exit %d %q %q", cmd, code, out, errs)
		}
	}
}
