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
	_ "github.com/jackc/pgx/v5/stdlib" // pgdbstore's driver

	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/internal/pgdbtest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
	"github.com/txinbox/txinbox/store/pgdbstore"
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

// storeCase is a test run against every store: PostgreSQL on pgx
// (pgstore), and the database/sql stores (sqlStores).
type storeCase struct {
	name string
	pg   func(*testing.T, *env[pgx.Tx])
	db   func(*testing.T, *env[*sql.Tx])
}

// sqlStores are the stores whose handlers get a *sql.Tx: SQLite,
// PostgreSQL on database/sql (pgx's stdlib) and MariaDB (or the MySQL of
// TXINBOX_MYSQL_URL).
var sqlStores = []struct {
	name string
	env  func(*testing.T) *env[*sql.Tx]
}{{"sqlitestore", sqliteEnv}, {"pgdbstore", pgdbEnv}, {"mysqlstore", mysqlEnv}}

func runCases(t *testing.T, cases []storeCase) {
	for _, c := range cases {
		t.Run(c.name+"/pgstore", func(t *testing.T) { c.pg(t, pgEnv(t)) })
		for _, s := range sqlStores {
			t.Run(c.name+"/"+s.name, func(t *testing.T) { c.db(t, s.env(t)) })
		}
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
	return sqlEnv(t, d, d.DB(), `CREATE TABLE effects (id INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT NOT NULL)`, liteEffect)
}

// pgdbEnv is pgdbstore on pgx's stdlib, in a schema of its own.
func pgdbEnv(t *testing.T) *env[*sql.Tx] {
	t.Helper()
	schema := testdb.NewSchema(t, testdb.Require(t))
	db := pgdbtest.Open(t, "pgx", schema, 32)
	d, err := pgdbstore.New(db, pgdbstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return sqlEnv(t, d, db, `CREATE TABLE effects (id bigserial, k text NOT NULL)`,
		func(ctx context.Context, tx *sql.Tx, k string) (int64, error) {
			var id int64
			err := tx.QueryRowContext(ctx, `INSERT INTO effects (k) VALUES ($1) RETURNING id`, k).Scan(&id)
			return id, err
		})
}

// mysqlEnv is mysqlstore on a MariaDB (MySQL) database of its own.
func mysqlEnv(t *testing.T) *env[*sql.Tx] {
	e, _ := mysqlEnvURL(t)
	return e
}

// mysqlEnvURL is mysqlEnv and its database's URL.
func mysqlEnvURL(t *testing.T) (*env[*sql.Tx], string) {
	t.Helper()
	url := mysqltest.NewDatabase(t)
	db := mysqltest.Open(t, url, 32)
	d, err := mysqlstore.New(db, mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sqlEnv(t, d, db, `CREATE TABLE effects (id BIGINT AUTO_INCREMENT PRIMARY KEY, k LONGBLOB NOT NULL) ENGINE=InnoDB`, myEffect), url
}

// myEffect is the effect on MySQL, which has no INSERT ... RETURNING.
func myEffect(ctx context.Context, tx *sql.Tx, k string) (int64, error) {
	r, err := tx.ExecContext(ctx, `INSERT INTO effects (k) VALUES (?)`, k)
	if err != nil {
		return 0, err
	}
	return r.LastInsertId()
}

// sqlEnv migrates d, creates the effects table on db and counts its rows
// per k (in Go: no database's grouping of long or binary values).
func sqlEnv(t *testing.T, d store.Driver[*sql.Tx], db *sql.DB, create string, effect func(context.Context, *sql.Tx, string) (int64, error)) *env[*sql.Tx] {
	t.Helper()
	ctx := context.Background()
	if err := d.(store.Admin).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, create); err != nil {
		t.Fatal(err)
	}
	return &env[*sql.Tx]{t: t, driver: d, effect: effect,
		effects: func() map[string]int {
			rows, err := db.QueryContext(ctx, `SELECT k FROM effects`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			out := map[string]int{}
			for rows.Next() {
				var k []byte
				if err := rows.Scan(&k); err != nil {
					t.Fatal(err)
				}
				out[string(k)]++
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
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
