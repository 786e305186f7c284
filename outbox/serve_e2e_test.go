package outbox_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox/internal/amqptest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// partnerRequest is one request the HTTP target got.
type partnerRequest struct {
	header http.Header
	body   []byte
}

// partnerRecorder is the partner's HTTP endpoint: it keeps every request.
type partnerRecorder struct {
	mu   sync.Mutex
	reqs []partnerRequest
}

func (r *partnerRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, partnerRequest{req.Header.Clone(), body})
	r.mu.Unlock()
	w.Write([]byte("accepted")) //nolint:errcheck // the relay went away
}

func (r *partnerRecorder) got() []partnerRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]partnerRequest(nil), r.reqs...)
}

// TestServeOutboxToHTTPOnPostgreSQL starts from the outside: a RabbitMQ
// message in (published twice), the txinbox binary's serve with the
// outbox effect on PostgreSQL (joined to the claim) and its HTTP relay,
// an HTTP request out. The partner gets one POST whose body and headers
// are the message's, byte for byte; what becomes of hostile header values:
//   - invalid UTF-8 (stored base64 in value_base64): sent as the same raw
//     bytes (HTTP allows obs-text);
//   - 60 kB (RabbitMQ's frame_max, 128 kB by default, bounds a header
//     table): sent whole;
//   - a NUL (stored base64 too): no HTTP header can carry it, so the row
//     fails for good at once, without a send, its last_error naming the
//     header (`txinbox relay list-failed` lists it); its message is
//     processed and acked all the same.
func TestServeOutboxToHTTPOnPostgreSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the txinbox binary")
	}
	admin := testdb.Require(t)
	amqpURL := amqptest.Require(t)
	schema := testdb.NewSchema(t, admin)
	queue := "outbox-e2e-" + schema
	body := []byte("UNA:+.? '\x00\xff binary payload\r\n")
	long := strings.Repeat("0123456789abcdef", 60<<10/16)
	good := amqp091.Table{"content-type": "application/edifact", "x-plain": "plain value", "x-utf8": "grüße",
		"x-invalid-utf8": "\xff\xfe\xfd", "x-long": long}
	publish(t, amqpURL, queue, map[string]amqp091.Table{"good": good, "nul": {"x-nul": "a\x00b"}}, body)

	rec := &partnerRecorder{}
	partner := httptest.NewServer(rec)
	defer partner.Close()
	stop := startServeBinary(t, "serve", "--db", testdb.URL(), "--schema", schema, "--amqp-url", amqpURL,
		"--amqp-queue", queue, "--effect", "outbox", "--no-purge", "--relay-target", "http", "--relay-http-url", partner.URL)
	failed := func() (n int, lastError string) {
		var exists bool
		if err := admin.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`,
			fmt.Sprintf("%q.txinbox_outbox", schema)).Scan(&exists); err != nil || !exists {
			return 0, "" // serve has not migrated yet
		}
		err := admin.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(*), coalesce(max(last_error), '')
			FROM %q.txinbox_outbox WHERE failed_at IS NOT NULL`, schema)).Scan(&n, &lastError)
		if err != nil {
			t.Fatal(err)
		}
		return n, lastError
	}
	deadline := time.Now().Add(60 * time.Second)
	for n, _ := failed(); len(rec.got()) < 1 || n < 1; n, _ = failed() {
		if time.Now().After(deadline) {
			t.Fatalf("after 60s: %d requests, %d failed rows", len(rec.got()), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // a second POST, if any, comes now
	stop()

	reqs := rec.got()
	if len(reqs) != 1 {
		t.Fatalf("the partner got %d requests, want 1 (the good message, published twice)", len(reqs))
	}
	r := reqs[0]
	if !bytes.Equal(r.body, body) {
		t.Errorf("body %q, want %q", r.body, body)
	}
	for k, v := range good {
		if got := r.header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("header %s = %.80q, want %.80q", k, got, v)
		}
	}
	if got := r.header.Get("Idempotency-Key"); !strings.Contains(got, "good") {
		t.Errorf("Idempotency-Key %q does not name the message", got)
	}
	if n, lastError := failed(); n != 1 || !strings.Contains(lastError, `"x-nul"`) ||
		!strings.Contains(lastError, "not a valid HTTP header name or value") {
		t.Errorf("%d rows failed for good (last error %q), want the NUL one, naming its header", n, lastError)
	}
}

// publish declares queue (deleted at cleanup) and publishes, for each id
// of headers, a persistent message with that message id, those headers
// and body, twice.
func publish(t *testing.T, url, queue string, headers map[string]amqp091.Table, body []byte) {
	t.Helper()
	conn, err := amqp091.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := amqp091.Dial(url); err == nil {
			if ch, err := c.Channel(); err == nil {
				ch.QueueDelete(queue, false, false, false) //nolint:errcheck // best effort
			}
			c.Close()
		}
	})
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for id, h := range headers {
			conf, err := ch.PublishWithDeferredConfirmWithContext(context.Background(), "", queue, false, false,
				amqp091.Publishing{MessageId: id, Headers: h, Body: body, DeliveryMode: amqp091.Persistent})
			if err != nil {
				t.Fatal(err)
			}
			if !conf.Wait() {
				t.Fatal("RabbitMQ nacked a message")
			}
		}
	}
}

// startServeBinary builds the txinbox binary and runs it with args; stop
// sends SIGTERM and fails the test unless it exits 0 within 30s.
func startServeBinary(t *testing.T, args ...string) (stop func()) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "txinbox")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/txinbox").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/txinbox: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v\n%s", err, out.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // stuck
			<-done
			t.Errorf("serve did not stop 30s after SIGTERM\n%s", out.String())
		}
	}
	t.Cleanup(stop)
	return stop
}
