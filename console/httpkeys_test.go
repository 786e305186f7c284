package console_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// TestHTTPKeysPage runs two routes of httpinbox over SQLite and MariaDB
// (or the MySQL of TXINBOX_MYSQL_URL), with a replay and a reused key,
// and a route of another HTTP inbox's scope (serve's ingress), and reads
// the console's page of HTTP keys.
func TestHTTPKeysPage(t *testing.T) {
	t.Run("sqlitestore", func(t *testing.T) { testHTTPKeysPage(t, sqlitetest.Open(t)) })
	t.Run("mysqlstore", func(t *testing.T) {
		d, err := mysqlstore.New(mysqltest.Open(t, mysqltest.NewDatabase(t), 8), mysqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		testHTTPKeysPage(t, d)
	})
}

// sqlAdmin is a store whose handlers get a *sql.Tx, with its Admin.
type sqlAdmin interface {
	store.Driver[*sql.Tx]
	store.Admin
}

func testHTTPKeysPage(t *testing.T, d sqlAdmin) {
	reg := prometheus.NewRegistry()
	hm := prom.NewHTTP(prom.Options{})
	reg.MustRegister(hm)
	// An application's own HTTP counter (no route, no event) is no route.
	app := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "app_http_requests_total", Help: "h"}, []string{"code"})
	app.WithLabelValues("200").Inc()
	reg.MustRegister(app)
	in, err := httpinbox.New(d, httpinbox.Config[*sql.Tx]{Observers: []httpinbox.Observer{hm}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	mux := http.NewServeMux()
	for name, status := range map[string]int{"orders": http.StatusCreated, "refunds": http.StatusConflict} {
		h, err := in.Handler(httpinbox.Route[*sql.Tx]{Name: name}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			io.WriteString(w, "answer of "+name) //nolint:errcheck
		}))
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("/"+name, h)
	}
	// serve's ingress: an HTTP inbox of another scope ("ingest:github").
	ingest, err := httpinbox.New(d, httpinbox.Config[*sql.Tx]{Scope: "ingest", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ingest.Close)
	gh, err := ingest.Handler(httpinbox.Route[*sql.Tx]{Name: "github"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/github", gh)
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	send := func(path, key, body string) int {
		req, _ := http.NewRequest(http.MethodPost, api.URL+path, strings.NewReader(body))
		req.Header.Set("Idempotency-Key", `"`+key+`"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, s := range []struct {
		path, key, body string
		want            int
	}{
		{"/orders", "o-1", "a", 201}, {"/orders", "o-1", "a", 201}, {"/orders", "o-1", "other", 422},
		{"/orders", "o-2", "b", 201}, {"/refunds", "r-1", "c", 409}, {"/github", "g-1", "d", 202},
	} {
		if got := send(s.path, s.key, s.body); got != s.want {
			t.Fatalf("POST %s key %s: %d, want %d", s.path, s.key, got, s.want)
		}
	}

	h, err := console.New(console.Config{Admin: d, Gatherer: reg, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ui := httptest.NewServer(h)
	t.Cleanup(ui.Close)
	resp, err := ui.Client().Get(ui.URL + "/ui/http-keys")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	orders, refunds, _ := strings.Cut(page[strings.Index(page, `id="route-orders"`)+1:], `id="route-refunds"`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="route-orders"`) || !strings.Contains(page, `id="route-refunds"`) {
		t.Fatalf("GET /ui/http-keys = %d:\n%s", resp.StatusCode, page)
	}
	for _, want := range []string{`/o-1</a>`, `/o-2</a>`, `<td class="num status">201</td>`, `<span class="replayed">1</span>`,
		`<span class="mismatch">1</span>`, `href="/ui/inspect?scope=http%3aorders&amp;id=%2fo-1"`} {
		if !strings.Contains(orders, want) {
			t.Errorf("the orders route lacks %s:\n%s", want, orders)
		}
	}
	if !strings.Contains(refunds, `/r-1</a>`) || !strings.Contains(refunds, `<td class="num status">409</td>`) || strings.Contains(refunds, "o-1") {
		t.Errorf("the refunds route:\n%s", refunds)
	}
	if _, github, _ := strings.Cut(page, `id="route-github"`); !strings.Contains(github, `/g-1</a>`) || !strings.Contains(github, `<td class="num status">202</td>`) {
		t.Errorf("the ingress route (scope ingest:github) is not listed:\n%s", page)
	}
	if strings.Contains(page, `id="route-"`) {
		t.Errorf("an application's http_requests_total shows as a route without a name:\n%s", page)
	}
	if !strings.Contains(page, `href="/ui/http-keys">HTTP keys</a>`) {
		t.Error("the navigation has no link to the HTTP keys")
	}
}

// httpKey sends one request with key through httpinbox on route, over
// the env's inbox; the handler answers 201.
func (e *env) httpKey(route, key string) bool { return storeHTTPKey(e.t, e.driver, route, key) }

// storeHTTPKey stores, through httpinbox on driver, a 201 answer for an
// Idempotency-Key on route.
func storeHTTPKey[TTx any](t *testing.T, driver store.Driver[TTx], route, key string) bool {
	t.Helper()
	in, err := httpinbox.New(driver, httpinbox.Config[TTx]{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	h, err := in.Handler(httpinbox.Route[TTx]{Name: route}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/"+route, strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /%s key %s: %d %s", route, key, rec.Code, rec.Body)
	}
	return true
}
