package prom_test

import (
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
	"github.com/txinbox/txinbox/metrics/prom"
)

// TestHTTPMetricsCountEvents: replays, conflicts, mismatches and missing
// keys are counted by route, event and status.
func TestHTTPMetricsCountEvents(t *testing.T) {
	m := prom.NewHTTP(prom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	in, err := httpinbox.New(sqlitetest.Open(t), httpinbox.Config[*sql.Tx]{Observers: []httpinbox.Observer{m}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	h, err := in.Handler(httpinbox.Route[*sql.Tx]{Name: "orders"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, body string }{{`"a"`, "1"}, {`"a"`, "1"}, {`"a"`, "1"}, {`"a"`, "2"}, {"", "1"}, {"x", "1"}} {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		if c.key != "" {
			req.Header.Set("Idempotency-Key", c.key)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	got := counts(t, reg, "txinbox_http_requests_total")
	for k, n := range map[string]float64{
		"event=processed,route=orders,status=201":   1,
		"event=replayed,route=orders,status=201":    2,
		"event=mismatch,route=orders,status=422":    1,
		"event=missing_key,route=orders,status=400": 1,
		"event=invalid_key,route=orders,status=400": 1,
	} {
		if got[k] != n {
			t.Errorf("%s = %v, want %v (all %v)", k, got[k], n, got)
		}
	}
}
