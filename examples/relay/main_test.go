package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestRelaySendsEachRowOnce writes outbox rows as a handler would, runs the
// example twice with -once, and checks that each row reached the endpoint
// once, with its stable id.
func TestRelaySendsEachRowOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "inbox.db")
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		e := outbox.Entry{Scope: "billing", MessageID: fmt.Sprintf("InvoiceIssued/%d", i), Topic: "partner", Payload: []byte("invoice")}
		if err := outboxlite.New(d).Add(ctx, tx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
	}))
	defer srv.Close()
	for i, want := range []string{"sent 5,", "sent 0,"} {
		var out strings.Builder
		if err := run(ctx, []string{"-db", path, "-url", srv.URL, "-once"}, &out); err != nil || !strings.HasPrefix(out.String(), want) {
			t.Fatalf("run %d: %v, printed %q, want %q...", i+1, err, out.String(), want)
		}
	}
	if len(got) != 5 {
		t.Fatalf("the endpoint got %d distinct keys, want 5: %v", len(got), got)
	}
	for k, n := range got {
		if n != 1 || k == "" {
			t.Errorf("key %q arrived %d times", k, n)
		}
	}
}

func TestRelayNeedsDBAndURL(t *testing.T) {
	if err := run(context.Background(), []string{"-url", "http://x"}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "-db") {
		t.Fatalf("run without -db: %v", err)
	}
}
