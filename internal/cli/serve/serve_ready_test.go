package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// deadAddr is a loopback address where nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestServeReadyzNamesDisconnectedSources: serve starts with brokers that
// do not answer (they may come later), and /readyz answers 503 naming each
// source that is not connected, while the database check is ok; the
// sources stop at the cancel and serve exits 0.
func TestServeReadyzNamesDisconnectedSources(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{lines: make(chan string, 64), logged: true}
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: out, Stderr: io.MultiWriter(errs, out), Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	dead := deadAddr(t)
	go func() {
		done <- cli.Main(ctx, env, []string{"serve", "--db", filepath.Join(t.TempDir(), "r.db"), "--http-listen", "127.0.0.1:0",
			"--no-purge", "--log-format", "json",
			"--nats-url", "nats://" + dead, "--nats-stream", "S", "--nats-consumer", "c",
			"--amqp-url", "amqp://guest:guest@" + dead + "/", "--amqp-queue", "q",
			"--kafka-brokers", dead, "--kafka-topics", "t", "--kafka-group", "g"})
	}()
	var opsURL string
	for ready := false; !ready; {
		select {
		case line := <-out.lines:
			if rest, ok := strings.CutPrefix(line, "health and metrics on "); ok {
				opsURL, _, _ = strings.Cut(rest, " ")
			}
			ready = strings.HasPrefix(line, "ready: ")
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errs)
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not start: %s", errs)
		}
	}
	resp, err := http.Get(opsURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`"database":"ok"`, `"nats":"not connected`, `"amqp":"not connected"`, `"kafka":"`} {
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), want) {
			t.Errorf("/readyz = %d %s; want 503 and %s", resp.StatusCode, body, want)
		}
	}
	if strings.Contains(string(body), `"kafka":"ok"`) {
		t.Errorf("/readyz: Kafka ok without a broker: %s", body)
	}
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Errorf("serve exited %d: %s", code, errs)
	}
}

// TestServeOutboxEffectForBrokerMessages: --effect outbox writes one row per
// new broker message: part 0, the source's name, the payload.
func TestServeOutboxEffectForBrokerMessages(t *testing.T) {
	t.Parallel()
	natsURL, js := startNATS(t)
	publishOrders(t, js, 3, 1)
	path := filepath.Join(t.TempDir(), "o.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: io.Discard, Stderr: errs, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, env, []string{"serve", "--db", path, "--no-purge", "--effect", "outbox",
			"--nats-url", natsURL, "--nats-stream", "ORDERS", "--nats-consumer", "outbox", "--nats-key", "header:message-id"})
	}()
	waitFor(t, "every message acked", func() bool {
		c, err := js.Consumer(ctx, "ORDERS", "outbox")
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Consumer == 4
	})
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errs)
	}
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var n int
	if err := d.DB().QueryRow(`SELECT count(*) FROM txinbox_outbox WHERE part = 0 AND source = 'nats' AND scope = 'nats'
		AND message_id = 'order-' || (CAST(payload AS TEXT) ->> '$.order')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d outbox rows, want 3", n)
	}
}

// TestServeStartupLinesThroughLogger: with --log-format json every line
// serve writes, the start and stop lines too ("ready: as4", "stopped"),
// is a JSON log record on stderr, and stdout stays empty.
func TestServeStartupLinesThroughLogger(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errs := &syncBuffer{}, &lineWriter{lines: make(chan string, 64)}
	env := &clikit.Env{Stdout: out, Stderr: errs, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, env, []string{"serve", "--db", filepath.Join(t.TempDir(), "l.db"), "--as4-listen", "127.0.0.1:0",
			"--http-listen", "127.0.0.1:0", "--no-purge", "--log-format", "json"})
	}()
	var logged []string
	for ready := false; !ready; {
		select {
		case line := <-errs.lines:
			var rec struct{ Msg string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Errorf("stderr line %q is no JSON log record: %v", line, err)
			}
			logged = append(logged, rec.Msg)
			ready = rec.Msg == "txinbox: ready: as4"
		case code := <-done:
			t.Fatalf("serve exited %d before its ready line; logged %q, stdout %q", code, logged, out)
		case <-time.After(60 * time.Second):
			t.Fatalf("no ready line logged within 60 s; logged %q, stdout %q", logged, out)
		}
	}
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Errorf("serve exited %d", code)
	}
	if out.String() != "" {
		t.Errorf("stdout %q, want nothing: the start and stop lines are logged", out)
	}
}
