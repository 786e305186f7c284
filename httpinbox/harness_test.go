package httpinbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// env is one store under test: a migrated inbox of its own and an
// effects table without a unique constraint, so that a double effect
// shows.
type env[TTx any] struct {
	t      testing.TB
	pool   *pgxpool.Pool // pgstore's
	driver store.Driver[TTx]
	// effect writes one effect row for k in tx and returns its id.
	effect func(ctx context.Context, tx TTx, k string) (int64, error)
	// effects counts the committed effect rows per k.
	effects func() map[string]int
}

// storeCase is a test run against PostgreSQL (pgstore) and SQLite
// (sqlitestore).
type storeCase struct {
	name string
	pg   func(*testing.T, *env[pgx.Tx])
	lite func(*testing.T, *env[*sql.Tx])
}

func runCases(t *testing.T, cases []storeCase) {
	for _, c := range cases {
		t.Run(c.name+"/pgstore", func(t *testing.T) { c.pg(t, pgEnv(t)) })
		t.Run(c.name+"/sqlitestore", func(t *testing.T) { c.lite(t, sqliteEnv(t)) })
	}
}

func pgEnv(t testing.TB) *env[pgx.Tx] {
	t.Helper()
	schema := testdb.NewSchema(t, testdb.Require(t))
	pool := testdb.PoolIn(t, schema, 32)
	d, err := pgstore.New(pool, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (id bigserial, k text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return &env[pgx.Tx]{t: t, pool: pool, driver: d,
		effect: func(ctx context.Context, tx pgx.Tx, k string) (int64, error) {
			var id int64
			err := tx.QueryRow(ctx, `INSERT INTO effects (k) VALUES ($1) RETURNING id`, k).Scan(&id)
			return id, err
		},
		effects: func() map[string]int {
			rows, _ := pool.Query(ctx, `SELECT k, count(*) FROM effects GROUP BY k`)
			out := map[string]int{}
			var k string
			var n int
			_, err := pgx.ForEachRow(rows, []any{&k, &n}, func() error { out[k] = n; return nil })
			if err != nil {
				t.Fatal(err)
			}
			return out
		}}
}

func sqliteEnv(t *testing.T) *env[*sql.Tx] {
	t.Helper()
	return sqliteEnvOn(t, sqlitetest.Open(t))
}

// sqliteEnvOn migrates d and adds the effects table.
func sqliteEnvOn(t *testing.T, d *sqlitestore.Driver) *env[*sql.Tx] {
	t.Helper()
	ctx := context.Background()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DB().ExecContext(ctx, `CREATE TABLE effects (id INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return &env[*sql.Tx]{t: t, driver: d,
		effect: func(ctx context.Context, tx *sql.Tx, k string) (int64, error) {
			var id int64
			err := tx.QueryRowContext(ctx, `INSERT INTO effects (k) VALUES (?) RETURNING id`, k).Scan(&id)
			return id, err
		},
		effects: func() map[string]int {
			rows, err := d.DB().QueryContext(ctx, `SELECT k, count(*) FROM effects GROUP BY k`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			out := map[string]int{}
			for rows.Next() {
				var k string
				var n int
				if err := rows.Scan(&k, &n); err != nil {
					t.Fatal(err)
				}
				out[k] = n
			}
			return out
		}}
}

// inbox opens an Inbox on e's store, closed at cleanup.
func (e *env[TTx]) inbox(cfg httpinbox.Config[TTx]) *httpinbox.Inbox[TTx] {
	e.t.Helper()
	in, err := httpinbox.New(e.driver, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(in.Close)
	return in
}

// orders is the business handler of the tests (ordersHandler).
func (e *env[TTx]) orders() http.Handler { return ordersHandler(e.effect) }

// ordersHandler writes one effect row named by the request body (and the
// caller), and answers 201 with the row's id, which differs on every run:
// a replay shows the committed run's.
func ordersHandler[TTx any](effect func(context.Context, TTx, string) (int64, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, ok := httpinbox.TxFromContext[TTx](r.Context())
		if !ok {
			http.Error(w, "no transaction", http.StatusInternalServerError)
			return
		}
		body, _ := io.ReadAll(r.Body)
		k := string(body)
		if who, ok := r.Context().Value(principalKey{}).(string); ok {
			k = who + ":" + k
		}
		id, err := effect(r.Context(), tx, k)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Order-Id", fmt.Sprint(id))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"order":%d,"for":%q}`, id, k)
	})
}

// serve serves h on a test server closed at cleanup.
func (e *env[TTx]) serve(h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	e.t.Cleanup(srv.Close)
	return srv
}

func (e *env[TTx]) route(in *httpinbox.Inbox[TTx], rt httpinbox.Route[TTx], h http.Handler) *httptest.Server {
	e.t.Helper()
	rh, err := in.Handler(rt, h)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.serve(rh)
}

type principalKey struct{}
