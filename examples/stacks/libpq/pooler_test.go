package libpq

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// TestCheckPooler: on lib/pq, which does not tell the backend process a
// connection started on, CheckPooler still finds PgBouncer's transaction
// pool and Migrate refuses the read-only guard there; directly it finds
// nothing and Migrate works.
func TestCheckPooler(t *testing.T) {
	ctx := context.Background()
	open := func(t *testing.T, u string) *sql.DB {
		name := testdb.NewDatabase(t, testdb.Require(t))
		parsed, err := url.Parse(testdb.WithDatabase(t, u, name))
		if err != nil {
			t.Fatal(err)
		}
		q := parsed.Query()
		q.Del("default_query_exec_mode") // pgx's; lib/pq would send it as a startup parameter
		parsed.RawQuery = q.Encode()
		db, err := sql.Open("postgres", parsed.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	t.Run("TransactionPool", func(t *testing.T) {
		d, err := pgdbstore.New(open(t, testdb.RequirePgBouncer(t)), pgdbstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := d.CheckPooler(ctx)
		var pe *pgdbstore.PoolerError
		if !p.Transaction || !errors.As(err, &pe) || !strings.Contains(err.Error(), "txinbox_readonly_guard=off") {
			t.Fatalf("CheckPooler = %+v, %v; want a transaction pooler and a *PoolerError naming txinbox_readonly_guard=off", p, err)
		}
		if err := d.Migrate(ctx); !errors.As(err, &pe) {
			t.Fatalf("Migrate = %v; want the *PoolerError", err)
		}
	})
	t.Run("Direct", func(t *testing.T) {
		d, err := pgdbstore.New(open(t, testdb.URL()), pgdbstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := d.CheckPooler(ctx); p.Transaction || err != nil {
			t.Fatalf("CheckPooler = %+v, %v; want no transaction pooler", p, err)
		}
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
