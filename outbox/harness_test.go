package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/outbox/outboxpg"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func TestMain(m *testing.M) {
	runChild()
	goleak.VerifyTestMain(m)
}

// db is an outbox table of either database, with what the tests need to
// write rows and look at the table.
type db struct {
	kind string
	// many is the row count of the tests of many rows: 2000 on
	// PostgreSQL; fewer on SQLite, whose transpiled C runs 10-20 times
	// slower under -race.
	many  int
	desc  string // what a child process needs to open it: a schema or a file
	store outbox.Store
	table string
	// open returns another Store on the same table, on its own pool or
	// handle (a second relay "elsewhere").
	open func(t *testing.T) outbox.Store
	// openCrashable is open plus a function that takes the database
	// away from that store (terminates its connections, closes it).
	openCrashable func(t *testing.T) (outbox.Store, func())
	// tryAdd writes entries in one transaction, as a handler would.
	tryAdd func(es ...outbox.Entry) error
	// exec runs a statement ($1-style parameters).
	exec func(t *testing.T, q string, args ...any)
	// count counts the rows matching where.
	count func(t *testing.T, where string) int
	// text reads one text column of row id.
	text func(t *testing.T, col string, id int64) string
}

// eachDB runs fn against PostgreSQL (on pgx, and on database/sql) and
// SQLite, and MySQL (MariaDB).
func eachDB(t *testing.T, fn func(t *testing.T, d *db)) {
	t.Run("postgres", func(t *testing.T) { fn(t, newPG(t)) })
	t.Run("pgdbstore", func(t *testing.T) { fn(t, newPGDB(t)) })
	t.Run("sqlite", func(t *testing.T) { fn(t, newLite(t)) })
	t.Run("mysql", func(t *testing.T) { fn(t, newMy(t)) })
}

func newPG(t *testing.T) *db {
	root := testdb.Require(t)
	schema := testdb.NewSchema(t, root)
	pool := testdb.PoolIn(t, schema, 8)
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	pg := outboxpg.New(d)
	x := &db{kind: "postgres", many: 2000, desc: schema, store: pg, table: d.Tables().Outbox}
	x.open = func(t *testing.T) outbox.Store {
		d2, err := pgstore.New(testdb.PoolIn(t, schema, 8), pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return outboxpg.New(d2)
	}
	x.openCrashable = func(t *testing.T) (outbox.Store, func()) {
		cfg, err := pgxpool.ParseConfig(testdb.URL())
		if err != nil {
			t.Fatal(err)
		}
		app := "crash_" + schema
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		cfg.ConnConfig.RuntimeParams["application_name"] = app
		p2, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p2.Close)
		d2, err := pgstore.New(p2, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return outboxpg.New(d2), func() {
			x.exec(t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app)
		}
	}
	x.tryAdd = func(es ...outbox.Entry) error {
		return pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
			for _, e := range es {
				if err := pg.Add(context.Background(), tx, e); err != nil {
					return err
				}
			}
			return nil
		})
	}
	x.exec = func(t *testing.T, q string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(context.Background(), q, args...); err != nil {
			t.Fatal(err)
		}
	}
	x.count = func(t *testing.T, where string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+x.table+" WHERE "+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	x.text = func(t *testing.T, col string, id int64) string {
		t.Helper()
		var s *string
		if err := pool.QueryRow(context.Background(), "SELECT "+col+"::text FROM "+x.table+" WHERE id = $1", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		if s == nil {
			return "<nil>"
		}
		return *s
	}
	return x
}

func openLite(t testing.TB, path string) *sqlitestore.Driver {
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func newLite(t *testing.T) *db {
	path := filepath.Join(t.TempDir(), "inbox.db")
	d := openLite(t, path)
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	lite := outboxlite.New(d)
	x := &db{kind: "sqlite", many: 400, desc: path, store: lite, table: d.Tables().Outbox}
	x.open = func(t *testing.T) outbox.Store { return outboxlite.New(openLite(t, path)) }
	x.openCrashable = func(t *testing.T) (outbox.Store, func()) {
		d2 := openLite(t, path)
		return outboxlite.New(d2), func() { d2.Close() }
	}
	x.tryAdd = func(es ...outbox.Entry) error {
		tx, err := d.DB().Begin()
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := lite.Add(context.Background(), tx, e); err != nil {
				tx.Rollback()
				return err
			}
		}
		return tx.Commit()
	}
	x.exec = func(t *testing.T, q string, args ...any) {
		t.Helper()
		if _, err := d.DB().Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	x.count = func(t *testing.T, where string) int {
		t.Helper()
		var n int
		if err := d.DB().QueryRow("SELECT count(*) FROM " + x.table + " WHERE " + where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	x.text = func(t *testing.T, col string, id int64) string {
		t.Helper()
		var s sql.NullString
		if err := d.DB().QueryRow("SELECT CAST("+col+" AS TEXT) FROM "+x.table+" WHERE id = $1", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		if !s.Valid {
			return "<nil>"
		}
		return s.String
	}
	return x
}

// add writes entries in one transaction, as a handler would.
func (x *db) add(t *testing.T, es ...outbox.Entry) {
	t.Helper()
	if err := x.tryAdd(es...); err != nil {
		t.Fatal(err)
	}
}

var discard = slog.New(slog.DiscardHandler)

// entries returns n entries spread over keys (none when keys is 0).
func entries(n, keys int) []outbox.Entry {
	es := make([]outbox.Entry, n)
	for i := range es {
		es[i] = outbox.Entry{Scope: "s", MessageID: fmt.Sprint("m", i), Part: 0, Topic: "t",
			ContentType: "text/plain", Payload: fmt.Appendf(nil, "payload %d", i)}
		if keys > 0 {
			es[i].Key = fmt.Sprint("k", i%keys)
		}
	}
	return es
}

// recorder is a Target that records every send and checks, as they
// happen, that no row (and, when ordered, no key) is sent twice at once.
type recorder struct {
	mu       sync.Mutex
	attempts map[string]int     // stable id → sends
	ok       map[string]int     // stable id → confirmed sends
	order    map[string][]int64 // key → ids confirmed, in order
	inFlight map[string]bool    // stable ids and "key:"+key being sent
	overlaps []string
	ordered  bool
	// fail, when set, decides the result of a send.
	fail func(m *outbox.Message) error
}

func newRecorder(ordered bool) *recorder {
	return &recorder{attempts: map[string]int{}, ok: map[string]int{}, order: map[string][]int64{},
		inFlight: map[string]bool{}, ordered: ordered}
}

func (r *recorder) Send(ctx context.Context, m *outbox.Message) (outbox.Receipt, error) {
	id := m.StableID()
	r.mu.Lock()
	r.attempts[id]++
	locks := []string{id}
	if r.ordered && m.Key != "" {
		locks = append(locks, "key:"+m.Key)
	}
	for _, l := range locks {
		if r.inFlight[l] {
			r.overlaps = append(r.overlaps, l)
		}
		r.inFlight[l] = true
	}
	r.mu.Unlock()
	var err error
	if r.fail != nil {
		err = r.fail(m)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range locks {
		delete(r.inFlight, l)
	}
	if err != nil {
		return nil, err
	}
	r.ok[id]++
	r.order[m.Key] = append(r.order[m.Key], m.ID)
	return outbox.Receipt("ok " + id), nil
}

// check fails t unless every one of the n entries was confirmed exactly
// once, no send overlapped another of its row (or key), and, when
// ordered, each key's rows were confirmed in id order.
func (r *recorder) check(t *testing.T, n int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.overlaps) > 0 {
		t.Errorf("sends overlapped: %v", r.overlaps[:min(len(r.overlaps), 10)])
	}
	if len(r.ok) != n {
		t.Errorf("%d rows confirmed, want %d", len(r.ok), n)
	}
	for id, c := range r.ok {
		if c != 1 {
			t.Errorf("%s confirmed %d times", id, c)
		}
	}
	if !r.ordered {
		return
	}
	for k, ids := range r.order {
		for i := 1; i < len(ids); i++ {
			if k != "" && ids[i] <= ids[i-1] {
				t.Errorf("key %s: row %d confirmed after row %d", k, ids[i], ids[i-1])
				break
			}
		}
	}
}
