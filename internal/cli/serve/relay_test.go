package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// outboxRows migrates a SQLite database and writes n outbox rows, the one
// with MessageID "bad" included when bad is set.
func outboxRows(t *testing.T, n int, bad bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "inbox.db")
	if _, errs, code := run(t, "migrate", "--db", path); code != 0 {
		t.Fatal(errs)
	}
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tx, err := d.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprint("m", i)
		if bad && i == 0 {
			id = "bad"
		}
		if err := outboxlite.New(d).Add(context.Background(), tx, outbox.Entry{Scope: "s", MessageID: id, Key: "k",
			ContentType: "text/plain", Payload: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

// receiver is an HTTP endpoint that refuses the payload "bad" with 422
// until fixed, and records the Idempotency-Keys it accepted.
type receiver struct {
	mu    sync.Mutex
	keys  []string
	fixed bool
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if string(b) == "bad" && !r.fixed {
		http.Error(w, "invalid invoice", http.StatusUnprocessableEntity)
		return
	}
	r.keys = append(r.keys, req.Header.Get("Idempotency-Key"))
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keys)
}

func TestRelayOnceListFailedReplayStatus(t *testing.T) {
	db := outboxRows(t, 5, true)
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	out, errs, code := run(t, "relay", "--db", db, "--target", "http", "--http-url", srv.URL, "--once", "--ordered")
	if code != 0 || !strings.Contains(out, "sent 4, retrying 0, failed 1") {
		t.Fatalf("relay --once: %d %q %q", code, out, errs)
	}
	if rcv.count() != 4 || rcv.keys[0] != "s/m1/0" {
		t.Errorf("received %v", rcv.keys)
	}
	out, _, code = run(t, "relay", "list-failed", "--db", db, "--json")
	var f map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &f) != nil || f["message_id"] != "bad" || !strings.Contains(f["last_error"].(string), "422") {
		t.Fatalf("list-failed: %d %q", code, out)
	}
	if out, _, code := run(t, "relay", "list-failed", "--db", db); code != 0 || !strings.Contains(out, "s/bad/0") {
		t.Errorf("list-failed table: %d %q", code, out)
	}
	out, _, code = run(t, "status", "--db", db, "--json")
	var st struct{ Outbox map[string]any }
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Outbox["failed"] != 1.0 || st.Outbox["sent"] != 4.0 || st.Outbox["unsent"] != 0.0 {
		t.Errorf("status --json: %d %q", code, out)
	}
	if out, _, code := run(t, "status", "--db", db); code != 0 || !strings.Contains(out, "outbox failed") {
		t.Errorf("status: %d %q", code, out)
	}
	id := fmt.Sprint(f["id"])
	if _, errs, code := run(t, "relay", "replay", "--db", db, id); code != clikit.ExitUsage || !strings.Contains(errs, "--reason is required") {
		t.Errorf("replay without --reason: %d %q", code, errs)
	}
	if out, errs, code := run(t, "relay", "replay", "--db", db, "--reason", "partner fixed", "--actor", "ops", id); code != 0 || !strings.Contains(out, "due again") {
		t.Fatalf("replay: %d %q %q", code, out, errs)
	}
	checkReplayAudited(t, db, "ops", "partner fixed", "s", "bad", id)
	if _, errs, code := run(t, "relay", "replay", "--db", db, "--reason", "again", id); code != clikit.ExitUsage || !strings.Contains(errs, "no failed outbox row") {
		t.Errorf("second replay: %d %q", code, errs)
	}
	rcv.mu.Lock()
	rcv.fixed = true
	rcv.mu.Unlock()
	if out, errs, code := run(t, "relay", "--db", db, "--target", "http", "--http-url", srv.URL, "--once"); code != 0 || !strings.Contains(out, "sent 1,") {
		t.Errorf("relay after replay: %d %q %q", code, out, errs)
	}
}

func TestRelayRunsUntilCancelled(t *testing.T) {
	db := outboxRows(t, 20, false)
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	env := &clikit.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, env, []string{"relay", "--db", db, "--target", "http", "--http-url", srv.URL})
	}()
	for deadline := time.Now().Add(30 * time.Second); rcv.count() < 20; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of 20 within 30s", rcv.count())
		}
	}
	cancel() // SIGTERM
	if code := <-done; code != 0 || !strings.Contains(out.String(), "stopped: sent 20") {
		t.Errorf("relay exited %d: %q %q", code, out.String(), errb.String())
	}
}

func TestRelayFlags(t *testing.T) {
	db := outboxRows(t, 0, false)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"relay", "--db", db}, "--target is required"},
		{[]string{"relay", "--db", db, "--target", "smtp"}, `--target "smtp"`},
		{[]string{"relay", "--db", db, "--target", "kafka"}, "--kafka-brokers"},
		{[]string{"relay", "--db", db, "--target", "amqp"}, "--amqp-url"},
		{[]string{"relay", "--db", db, "--target", "http"}, "--http-url"},
		{[]string{"relay", "--db", db, "--target", "http", "--http-url", "http://x", "--batch", "-1"}, "--batch"},
		{[]string{"relay", "frob", "--db", db}, "unknown subcommand"},
		{[]string{"relay", "replay", "--db", db, "--reason", "r", "x"}, "not an outbox row ID"},
	} {
		if _, errs, code := run(t, c.args...); code != clikit.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: %d %q, want usage naming %s", c.args, code, errs, c.want)
		}
	}
}
