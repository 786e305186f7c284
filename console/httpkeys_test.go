package console_test

import (
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
	"github.com/txinbox/txinbox/metrics/prom"
)

// TestHTTPKeysPage runs two routes of httpinbox over SQLite, with a
// replay and a reused key, and reads the console's page of HTTP keys.
func TestHTTPKeysPage(t *testing.T) {
	d := sqlitetest.Open(t)
	reg := prometheus.NewRegistry()
	hm := prom.NewHTTP(prom.Options{})
	reg.MustRegister(hm)
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
		{"/orders", "o-2", "b", 201}, {"/refunds", "r-1", "c", 409},
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
	if !strings.Contains(page, `href="/ui/http-keys">HTTP keys</a>`) {
		t.Error("the navigation has no link to the HTTP keys")
	}
}

// httpKey sends one request with key through httpinbox on route, over
// the env's inbox; the handler answers 201.
func (e *env) httpKey(route, key string) bool {
	e.t.Helper()
	in, err := httpinbox.New(e.driver, httpinbox.Config[pgx.Tx]{Logger: quiet()})
	if err != nil {
		e.t.Fatal(err)
	}
	defer in.Close()
	h, err := in.Handler(httpinbox.Route[pgx.Tx]{Name: route}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	if err != nil {
		e.t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/"+route, strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		e.t.Fatalf("POST /%s key %s: %d %s", route, key, rec.Code, rec.Body)
	}
	return true
}
