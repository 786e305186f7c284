package serve_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// seenRequest is one request an HTTP receiver got.
type seenRequest struct {
	header http.Header
	body   string
}

// TestServeOutboxFromKafkaThroughTheRelay: Kafka records, one with a
// repeated header and one with a header value HTTP cannot carry (a NUL),
// go through serve --effect outbox to the outbox table, and relay --target
// http --once sends them: the good ones with their headers in order, the
// body and the row's stable id as Idempotency-Key; the bad one fails for
// good without holding up the others, and list-failed says why.
func TestServeOutboxFromKafkaThroughTheRelay(t *testing.T) {
	t.Parallel()
	seeds, cl := startKafka(t, map[string]string{"orders": ""})
	records := []*kgo.Record{
		{Topic: "orders", Key: []byte("a"), Value: []byte(`{"n":1}`), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte("o-1")},
			{Key: "X-Trace", Value: []byte("first")}, {Key: "content-type", Value: []byte("application/json")}, {Key: "X-Trace", Value: []byte("second")}}},
		{Topic: "orders", Key: []byte("a"), Value: []byte("binary"), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte("o-2")},
			{Key: "X-Bin", Value: []byte("\x00\xff")}}},
		{Topic: "orders", Key: []byte("a"), Value: []byte("three"), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte("o-3")}}},
	}
	for _, r := range records {
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "k.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: io.Discard, Stderr: errs, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, env, []string{"serve", "--db", path, "--no-purge", "--effect", "outbox", "--kafka-brokers", seeds,
			"--kafka-topics", "orders", "--kafka-group", "g", "--kafka-key", "header:message-id", "--kafka-scope", "orders",
			"--retention", "30d", "--accept-short-retention"})
	}()
	rows := func() int {
		d, err := sqlitestore.Open(path, sqlitestore.Options{})
		if err != nil {
			return 0
		}
		defer d.Close()
		var n int
		if err := d.DB().QueryRow(`SELECT count(*) FROM txinbox_outbox`).Scan(&n); err != nil && err != sql.ErrNoRows {
			return 0
		}
		return n
	}
	for deadline := time.Now().Add(60 * time.Second); rows() < len(records); time.Sleep(50 * time.Millisecond) {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d outbox rows after 60s, want %d: %s", rows(), len(records), errs)
		}
	}
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errs)
	}

	var mu sync.Mutex
	got := map[string]seenRequest{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got[r.Header.Get("Idempotency-Key")] = seenRequest{r.Header.Clone(), string(b)}
	}))
	defer srv.Close()
	out, rerrs, code := run(t, "relay", "--db", path, "--target", "http", "--http-url", srv.URL, "--once")
	if code != 0 || !strings.Contains(out, "sent 2, retrying 0, failed 1") {
		t.Fatalf("relay --once: exit %d, %q %q", code, out, rerrs)
	}
	first, ok := got["orders/o-1/0"]
	if !ok || len(got) != 2 || got["orders/o-3/0"].body != "three" {
		t.Fatalf("the receiver got %v, want orders/o-1/0 and orders/o-3/0", got)
	}
	if tr := first.header.Values("X-Trace"); !slices.Equal(tr, []string{"first", "second"}) || first.body != `{"n":1}` ||
		first.header.Get("Content-Type") != "application/json" || first.header.Get("Message-Id") != "o-1" {
		t.Errorf("first row sent with headers %v, body %q", first.header, first.body)
	}
	out, _, code = run(t, "relay", "list-failed", "--db", path, "--json")
	var f map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &f) != nil || f["message_id"] != "o-2" ||
		!strings.Contains(f["last_error"].(string), `header 1 ("X-Bin") is not a valid HTTP header`) {
		t.Fatalf("list-failed: %d %q", code, out)
	}
}

// TestServeKafkaRetryFlags: --kafka-backoff-initial and -max and
// TXINBOX_KAFKA_MAX_ATTEMPTS reach the Kafka source: a record whose
// statement always fails is dead-lettered after 2 attempts, within
// seconds, and the record behind it in the partition is processed.
func TestServeKafkaRetryFlags(t *testing.T) {
	t.Parallel()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	seeds, cl := startKafka(t, map[string]string{"orders": ""})
	for _, id := range []string{"poison", "after"} {
		r := &kgo.Record{Topic: "orders", Key: []byte("same-partition"), Value: []byte(id),
			Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte(id)}}}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: io.Discard, Stderr: errs, Stdin: strings.NewReader(""), Getenv: func(k string) string {
		if k == "TXINBOX_KAFKA_MAX_ATTEMPTS" {
			return "2"
		}
		return ""
	}}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, env, []string{"serve", "--db", testdb.URL(), "--schema", schema, "--no-purge", "--effect", "sql",
			"--effect-sql", "SELECT CASE WHEN $2 = 'poison' THEN 1/0 END", "--kafka-brokers", seeds, "--kafka-topics", "orders",
			"--kafka-group", "g", "--kafka-key", "header:message-id", "--kafka-scope", "orders", "--retention", "30d",
			"--accept-short-retention", "--kafka-backoff-initial", "100ms", "--kafka-backoff-max", "200ms"})
	}()
	var attempts, processed int
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errs)
		default:
		}
		admin.QueryRow(context.Background(), `SELECT coalesce(max(attempts), 0) FROM `+schema+`.txinbox_dead_letters WHERE message_id = 'poison'`).Scan(&attempts) //nolint:errcheck // polled
		admin.QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.txinbox_inbox WHERE message_id = 'after'`).Scan(&processed)                          //nolint:errcheck // polled
		if attempts > 0 && processed == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s: poison dead-lettered after %d attempts, %d records behind it processed: %s", attempts, processed, errs)
		}
	}
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errs)
	}
	if attempts != 2 || !strings.Contains(errs.String(), "max_attempts=2") {
		t.Errorf("dead-lettered after %d attempts, want 2 (TXINBOX_KAFKA_MAX_ATTEMPTS); log: %s", attempts, errs)
	}
}

// TestServeStopsWhenKafkaRefusesTheConfiguration: a session timeout above
// the group's maximum (kfake's 5 minutes, as Kafka's
// group.max.session.timeout.ms) is refused by the broker with
// INVALID_SESSION_TIMEOUT: serve stops with exit 2 and the broker's words
// instead of retrying for ever.
func TestServeStopsWhenKafkaRefusesTheConfiguration(t *testing.T) {
	t.Parallel()
	seeds, _ := startKafka(t, map[string]string{"orders": ""})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: io.Discard, Stderr: errs, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	code := cli.Main(ctx, env, []string{"serve", "--db", filepath.Join(t.TempDir(), "r.db"), "--no-purge",
		"--kafka-brokers", seeds, "--kafka-topics", "orders", "--kafka-group", "g", "--kafka-session-timeout", "10m"})
	if ctx.Err() != nil {
		t.Fatalf("serve still running after 60s: %s", errs)
	}
	if code != clikit.ExitUsage || !strings.Contains(errs.String(), "INVALID_SESSION_TIMEOUT") ||
		!strings.Contains(errs.String(), "refuse the consumer group for good") {
		t.Errorf("exit %d, stderr %s; want %d and the broker's INVALID_SESSION_TIMEOUT", code, errs, clikit.ExitUsage)
	}
}
