package console_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/console/as4view"
	"github.com/txinbox/txinbox/console/ediview"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/outbox/outboxpg"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck")); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

const scope = "invoices"

// env is one test's inbox on a real PostgreSQL, a processor over it and
// the console served by an httptest server.
type env struct {
	t       *testing.T
	ctx     context.Context
	pool    *pgxpool.Pool
	schema  string
	driver  *pgstore.Driver
	proc    *txinbox.Processor[pgx.Tx]
	fail    atomic.Bool // the handler fails for good while set
	srv     *httptest.Server
	console http.Handler
	admin   *countingAdmin // the console's Admin: the driver, its reads counted
}

// countingAdmin is the real driver, counting the reads the console's
// economy is about.
type countingAdmin struct {
	*pgstore.Driver
	scopeStats, getDeadLetter atomic.Int64
}

func (c *countingAdmin) ScopeStats(ctx context.Context, expiredBefore time.Time) ([]store.ScopeStats, error) {
	c.scopeStats.Add(1)
	return c.Driver.ScopeStats(ctx, expiredBefore)
}

func (c *countingAdmin) GetDeadLetter(ctx context.Context, id int64) (store.DeadLetterRecord, bool, error) {
	c.getDeadLetter.Add(1)
	return c.Driver.GetDeadLetter(ctx, id)
}

func newEnv(t *testing.T, auth console.Auth) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background()}
	e.pool = testdb.Require(t)
	e.schema = testdb.NewSchema(t, e.pool)
	d, err := pgstore.New(e.pool, pgstore.Options{Schema: e.schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.driver = d
	e.exec(`CREATE TABLE ` + e.schema + `.effects (id text NOT NULL)`)
	e.proc, err = txinbox.NewProcessor[pgx.Tx](d, txinbox.Config[pgx.Tx]{Scope: scope, Logger: quiet(),
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if _, err := tx.Exec(ctx, `INSERT INTO `+e.schema+`.effects VALUES ($1)`, m.ID); err != nil {
				return err
			}
			if e.fail.Load() {
				return txinbox.Permanent(errors.New("partner unknown: <b>bold</b>"))
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.proc.Close)
	as4s, err := as4pg.New(e.pool, as4pg.Options{Schema: e.schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := as4s.Migrate(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.admin = &countingAdmin{Driver: d}
	h, err := console.New(console.Config{Admin: e.admin, Outbox: outboxpg.New(d), AS4: as4view.Lister(as4s), EDI: ediview.Read, Auth: auth, Logger: quiet(),
		Scopes: []console.Scope{{Name: scope, Retention: 24 * time.Hour}}, Sources: []console.Source{
			{Name: "invoices-queue", Scope: scope, Ready: func(context.Context) error { return nil },
				Lag: func(context.Context) ([]source.Lag, error) { return []source.Lag{{Messages: 12}}, nil }},
			{Name: "orders-queue", Scope: scope, Ready: func(context.Context) error { return errors.New("connecting to the broker") }},
		}})
	if err != nil {
		t.Fatal(err)
	}
	e.console = h
	mux := http.NewServeMux()
	mux.Handle("/ui/", h)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

// process delivers messages to the processor and returns the outcomes.
func (e *env) process(msgs ...*txinbox.Message) []txinbox.Outcome {
	e.t.Helper()
	res, err := e.proc.Process(e.ctx, msgs)
	if err != nil {
		e.t.Fatalf("Process: %v", err)
	}
	var out []txinbox.Outcome
	for _, r := range res {
		out = append(out, r.Outcome)
	}
	return out
}

// deadLetter makes the processor dead-letter a message and returns its
// dead letter's id.
func (e *env) deadLetter(id, payload string) int64 {
	e.t.Helper()
	e.fail.Store(true)
	defer e.fail.Store(false)
	if out := e.process(msg(id, payload)); out[0] != txinbox.DeadLettered {
		e.t.Fatalf("outcome = %v, want dead-lettered", out[0])
	}
	in, err := e.driver.Inspect(e.ctx, store.Key{Scope: scope, MessageID: id})
	if err != nil || in.DeadLetter == nil {
		e.t.Fatalf("Inspect(%s) = %+v, %v", id, in, err)
	}
	return in.DeadLetter.ID
}

func msg(id, payload string) *txinbox.Message {
	return &txinbox.Message{ID: id, Source: "invoices-queue", SourcePosition: "7", Payload: []byte(payload)}
}

// effects counts the committed side effects of id.
func (e *env) effects(id string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM `+e.schema+`.effects WHERE id = $1`, id).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// get fetches a console page with the request's credentials set by auth.
func (e *env) get(path string, auth func(*http.Request)) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
	if auth != nil {
		auth(req)
	}
	return e.do(req)
}

// post sends a form like a browser on the console's origin would.
func (e *env) post(path string, form url.Values, auth func(*http.Request)) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if auth != nil {
		auth(req)
	}
	return e.do(req)
}

func (e *env) do(req *http.Request) (int, string) {
	e.t.Helper()
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the form token of a page.
func (e *env) csrfOf(body string) string {
	e.t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no csrf token in the page:\n%s", body)
	}
	return m[1]
}

func basic(user, pass string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}
