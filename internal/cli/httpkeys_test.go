package cli_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestHTTPKeysInStatusAndInspect stores an HTTP key's answer through the
// middleware, then reads it back with status and inspect.
func TestHTTPKeysInStatusAndInspect(t *testing.T) {
	db := filepath.Join(t.TempDir(), "inbox.db")
	d, err := sqlitestore.Open(db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	in, err := httpinbox.New(d, httpinbox.Config[*sql.Tx]{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	h, err := in.Handler(httpinbox.Route[*sql.Tx]{Name: "orders"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/orders/7")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"order":7}`)) //nolint:errcheck
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", `"k-1"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("request: %v %v", resp, err)
	}
	resp.Body.Close()

	out, errs, code := run(t, "inspect", "--db", db, "--scope", "http:orders", "/k-1")
	var got struct {
		State string
		Inbox struct {
			Reply struct {
				Status        int
				Headers       map[string][]string
				BodyBytes     int    `json:"body_bytes"`
				BodyPreview   string `json:"body_preview"`
				BodyTruncated bool   `json:"body_truncated"`
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("inspect: %d %q %q", code, out, errs)
	}
	r := got.Inbox.Reply
	if got.State != "processed" || r.Status != http.StatusCreated || r.BodyPreview != `{"order":7}` || r.BodyBytes != 11 ||
		r.BodyTruncated || len(r.Headers["Location"]) != 1 || r.Headers["Location"][0] != "/orders/7" {
		t.Errorf("inspect's reply: %+v in %s", got, out)
	}

	out, _, code = run(t, "status", "--db", db, "--scope-retention", "http:orders=7d")
	if code != 0 || !strings.Contains(out, "HTTP keys (httpinbox)") || !strings.Contains(out, "1 on 1 routes (0 expired") || !strings.Contains(out, "kept 7d") {
		t.Errorf("status: %d %q", code, out)
	}
	out, _, code = run(t, "status", "--db", db, "--json")
	var st struct {
		HTTPKeys struct {
			Keys, Routes int
			Retention    string
			Oldest       *string
		} `json:"http_keys"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.HTTPKeys.Keys != 1 || st.HTTPKeys.Routes != 1 ||
		st.HTTPKeys.Retention != "30d" || st.HTTPKeys.Oldest == nil {
		t.Errorf("status --json: %d %+v %q", code, st, out)
	}
}
