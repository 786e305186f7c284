package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/storetest"
)

func TestMain(m *testing.M) {
	runPeriodChild()
	runPurgeLockChild()
	storetest.RunChild(harness)
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"))
}

var harness = newHarness("pgstore", false, "")

// newHarness adapts pgstore to the conformance suite; partitioned migrates
// the partitioned layout, which the child processes then detect; mode is
// the pools' pgx query exec mode (execModes), "" for pgx's default.
func newHarness(name string, partitioned bool, mode string) storetest.Harness[pgx.Tx] {
	effect := "INSERT INTO effects (scope, message_id) SELECT scope, message_id FROM new_messages"
	if partitioned {
		effect = "" // no declarative effect on the partitioned layout
	}
	return storetest.Harness[pgx.Tx]{
		Name:            name,
		EffectStatement: effect,
		New: func(t *testing.T) (store.Driver[pgx.Tx], string) {
			admin := testdb.Require(t)
			schema := testdb.NewSchema(t, admin)
			pool := poolInMode(t, schema, mode, 16)
			if _, err := pool.Exec(context.Background(), "CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			d, err := pgstore.New(pool, pgstore.Options{Schema: schema, Partitioned: partitioned})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return d, modeURL(mode) + "|" + schema // the children's pools in mode too
		},
		Open: func(ctx context.Context, desc string) (store.Driver[pgx.Tx], func(), error) {
			url, schema, _ := strings.Cut(desc, "|")
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				return nil, nil, err
			}
			if schema != "" { // none: a database of its own, behind PgBouncer (bouncerHarness)
				cfg.ConnConfig.RuntimeParams["search_path"] = schema
			}
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				return nil, nil, err
			}
			d, err := pgstore.New(pool, pgstore.Options{Schema: schema})
			return d, pool.Close, err
		},
		InsertEffect: func(ctx context.Context, tx pgx.Tx, scope, id string) error {
			_, err := tx.Exec(ctx, "INSERT INTO effects (scope, message_id) VALUES ($1, $2)", scope, id)
			return err
		},
		Effects: func(t *testing.T, d store.Driver[pgx.Tx]) map[string]int {
			rows, _ := d.(*pgstore.Driver).Pool().Query(context.Background(), "SELECT scope || '/' || message_id, count(*) FROM effects GROUP BY 1")
			out := map[string]int{}
			var k string
			var n int
			if _, err := pgx.ForEachRow(rows, []any{&k, &n}, func() error { out[k] = n; return nil }); err != nil {
				t.Fatal(err)
			}
			return out
		},
		Exec: func(ctx context.Context, tx pgx.Tx, query string) error {
			_, err := tx.Exec(ctx, query)
			return err
		},
		Commit:    func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		Rollback:  func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) },
		SlowQuery: "SELECT pg_sleep(5)",
		InboxPayloadHash: func(t *testing.T, d store.Driver[pgx.Tx], scope, id string) []byte {
			pd := d.(*pgstore.Driver)
			var h []byte
			err := pd.Pool().QueryRow(context.Background(), pd.Tables().Expand("SELECT payload_hash FROM {inbox} WHERE scope = $1 AND message_id = $2"), scope, id).Scan(&h)
			if err == pgx.ErrNoRows {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			return h
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, harness)
}

// TestConformancePartitioned runs the suite on the partitioned layout.
func TestConformancePartitioned(t *testing.T) {
	storetest.Run(t, newHarness("pgstore-partitioned", true, ""))
}

// TestConformanceExecMode runs the suite with pools in pgx's exec mode,
// which describes no statement: pgx sends every parameter as text of an
// unknown type.
func TestConformanceExecMode(t *testing.T) {
	storetest.Run(t, newHarness("pgstore-exec", false, "exec"))
}
