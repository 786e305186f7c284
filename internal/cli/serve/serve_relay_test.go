package serve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestServeRelaysTheOutbox: an AS4 message (sent twice) becomes one outbox
// row in serve's outbox effect; the relay serve runs beside the endpoint
// POSTs it once, with the row's stable id, and marks it sent.
func TestServeRelaysTheOutbox(t *testing.T) {
	t.Parallel()
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "o.db")
	url, stop, errs := startServe(t, "--db", path, "--effect", "outbox", "--no-purge",
		"--relay-target", "http", "--relay-http-url", srv.URL)
	postReceipt(t, url)
	postReceipt(t, url)
	deadline := time.Now().Add(30 * time.Second)
	for rcv.count() < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if code := stop(); code != clikit.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errs)
	}
	if rcv.count() != 1 || !strings.HasPrefix(rcv.keys[0], "as4/") || !strings.HasSuffix(rcv.keys[0], "/0") {
		t.Fatalf("the receiver got %v, want one POST keyed as4/<key>/0", rcv.keys)
	}
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var sent int
	if err := d.DB().QueryRow(`SELECT count(*) FROM txinbox_outbox WHERE sent_at IS NOT NULL`).Scan(&sent); err != nil {
		t.Fatal(err)
	}
	if sent != 1 {
		t.Errorf("%d outbox rows marked sent, want 1", sent)
	}
}

func TestServeRelayFlagErrorsNameTheFlag(t *testing.T) {
	t.Parallel()
	_, errs, code := run(t, "serve", "--db", filepath.Join(t.TempDir(), "o.db"), "--as4-listen", "127.0.0.1:0", "--relay-target", "http")
	if code != clikit.ExitUsage || !strings.Contains(errs, "--relay-target http needs --relay-http-url") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestServeRelayOnly: serve with no source but --relay-target runs the
// relay alone and sends the rows already in the outbox; its purger then
// deletes the sent rows once they are older than the retention.
func TestServeRelayOnly(t *testing.T) {
	t.Parallel()
	db := outboxRows(t, 3, false)
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{lines: make(chan string, 16)}
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: out, Stderr: errs, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, env, []string{"serve", "--db", db, "--retention", "1s", "--purge-interval", "100ms",
			"--relay-target", "http", "--relay-http-url", srv.URL})
	}()
	deadline := time.Now().Add(30 * time.Second)
	outboxRowsLeft := func() int {
		d, err := sqlitestore.Open(db, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		var n int
		if err := d.DB().QueryRow(`SELECT count(*) FROM txinbox_outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for (rcv.count() < 3 || outboxRowsLeft() > 0) && time.Now().Before(deadline) {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errs)
		case <-out.lines:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if n := outboxRowsLeft(); n != 0 {
		t.Errorf("%d outbox rows left, want the 3 sent ones purged", n)
	}
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Errorf("serve exited %d: %s", code, errs)
	}
	if rcv.count() != 3 {
		t.Errorf("the receiver got %d rows, want 3", rcv.count())
	}
}

// TestServeReadyzShowsAStuckRelay: while the relay of serve --relay-target
// cannot claim (its table is gone), /readyz answers 503 naming the relay
// and why, and /metrics shows how long it has been failing; once the
// table is back the relay sends the row and /readyz is 200 again.
func TestServeReadyzShowsAStuckRelay(t *testing.T) {
	t.Parallel()
	db := outboxRows(t, 1, false)
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	d, err := sqlitestore.Open(db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rename := func(from, to string) {
		t.Helper()
		if _, err := d.DB().Exec(`ALTER TABLE ` + from + ` RENAME TO ` + to); err != nil {
			t.Fatal(err)
		}
	}
	rename("txinbox_outbox", "moved_away")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{lines: make(chan string, 64), logged: true}
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: out, Stderr: io.MultiWriter(errs, out), Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, env, []string{"serve", "--db", db, "--no-purge", "--http-listen", "127.0.0.1:0",
			"--relay-target", "http", "--relay-http-url", srv.URL})
	}()
	var opsURL string
	for opsURL == "" {
		select {
		case line := <-out.lines:
			if rest, ok := strings.CutPrefix(line, "health and metrics on "); ok {
				opsURL, _, _ = strings.Cut(rest, " ")
			}
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errs)
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not start: %s", errs)
		}
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(opsURL + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, "/readyz naming the stuck relay", func() bool {
		code, body := get("/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "claiming or recording fails since") &&
			strings.Contains(body, "no such table")
	})
	if _, metrics := get("/metrics"); !strings.Contains(metrics, "txinbox_outbox_relay_failing_seconds") ||
		strings.Contains(metrics, "txinbox_outbox_relay_batch_errors_total 0\n") {
		t.Errorf("/metrics without a failing relay:\n%s", metrics)
	}
	rename("moved_away", "txinbox_outbox")
	waitFor(t, "the row sent and /readyz ready", func() bool {
		code, _ := get("/readyz")
		return code == http.StatusOK && rcv.count() == 1
	})
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Errorf("serve exited %d: %s", code, errs)
	}
}
