package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/internal/testkit"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// lineWriter is a command's stdout that hands each line to a channel.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
	// logged: the lines are serve's log (stderr), and a start or stop
	// line is sent as the text serve logs ("ready: as4").
	logged bool
}

// progressText is the text of serve's start or stop line ("txinbox:
// ready: as4", text or JSON) without "txinbox: ", else line.
func progressText(line string) string {
	var msg string
	if strings.HasPrefix(line, "{") {
		var rec struct{ Msg string }
		if json.Unmarshal([]byte(line), &rec) != nil {
			return line
		}
		msg = rec.Msg
	} else if _, rest, ok := strings.Cut(line, ` msg="`); ok {
		q, err := strconv.QuotedPrefix(`"` + rest)
		if err != nil {
			return line
		}
		msg, _ = strconv.Unquote(q)
	}
	if text, ok := strings.CutPrefix(msg, "txinbox: "); ok {
		return text
	}
	return line
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line) // an unfinished line waits for its end
			return len(p), nil
		}
		line = strings.TrimSpace(line)
		if w.logged {
			line = progressText(line)
		}
		select {
		case w.lines <- line:
		default: // nobody waits for more lines
		}
	}
}

// syncBuffer is a command's stderr, read after the command returned.
type syncBuffer = testkit.SyncBuffer

// startServe runs serve in-process and returns the AS4 URL, a stop
// function that cancels its context and returns its exit status, and its
// stderr.
func startServe(t *testing.T, args ...string) (string, func() int, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWriter{lines: make(chan string, 64), logged: true}
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: out, Stderr: io.MultiWriter(errs, out), Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() { done <- cli.Main(ctx, env, append([]string{"serve", "--as4-listen", "127.0.0.1:0"}, args...)) }()
	stop := func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(60 * time.Second):
			t.Fatal("serve did not return within 60s of the cancel")
			return -1
		}
	}
	for {
		select {
		case line := <-out.lines:
			if url, ok := strings.CutPrefix(line, "as4 endpoint listening on "); ok {
				return url, stop, errs
			}
		case code := <-done:
			t.Fatalf("serve exited %d before listening: %s", code, errs)
		case <-time.After(60 * time.Second):
			cancel()
			t.Fatalf("serve did not listen within 60s: %s", errs)
		}
	}
}

const serveTestMessage = `<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><S12:Header><eb:Messaging S12:mustUnderstand="true"><eb:UserMessage><eb:MessageInfo><eb:Timestamp>2026-11-30T10:00:00Z</eb:Timestamp><eb:MessageId>serve-1@test</eb:MessageId></eb:MessageInfo><eb:PartyInfo><eb:From><eb:PartyId>a</eb:PartyId><eb:Role>initiator</eb:Role></eb:From><eb:To><eb:PartyId>b</eb:PartyId><eb:Role>responder</eb:Role></eb:To></eb:PartyInfo><eb:CollaborationInfo><eb:Service>s</eb:Service><eb:Action>act</eb:Action><eb:ConversationId>c</eb:ConversationId></eb:CollaborationInfo><eb:PayloadInfo><eb:PartInfo/></eb:PayloadInfo></eb:UserMessage></eb:Messaging></S12:Header><S12:Body><invoice>42</invoice></S12:Body></S12:Envelope>`

// postReceipt posts the test message and checks that the answer is a
// receipt for it.
func postReceipt(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Post(url, "application/soap+xml; charset=UTF-8", strings.NewReader(serveTestMessage))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ebms.Parse(bytes.NewReader(body), resp.Header.Get("Content-Type"))
	var sig *ebms.SignalError
	if resp.StatusCode != http.StatusOK || !errors.As(err, &sig) || sig.Signal != "Receipt" || sig.RefToMessageID != "serve-1@test" {
		t.Fatalf("status %d, %v; want a receipt:\n%s", resp.StatusCode, err, body)
	}
	return body
}

func testServe(t *testing.T, args ...string) {
	url, stop, errs := startServe(t, args...)
	first := postReceipt(t, url)
	if again := postReceipt(t, url); !bytes.Equal(first, again) {
		t.Errorf("the duplicate did not get the original receipt")
	}
	if code := stop(); code != clikit.ExitOK {
		t.Errorf("serve exited %d after the cancel, want 0: %s", code, errs)
	}
}

func TestServeAS4OnSQLite(t *testing.T) {
	t.Parallel()
	testServe(t, "--db", filepath.Join(t.TempDir(), "inbox.db"))
}

func TestServeAS4OnPostgres(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	testServe(t, "--db", testdb.URL(), "--schema", testdb.NewSchema(t, pool))
}

// TestServeDropsSlowClients: a client that never finishes its headers is
// disconnected after --read-header-timeout, and the endpoint keeps serving.
func TestServeDropsSlowClients(t *testing.T) {
	t.Parallel()
	url, stop, errs := startServe(t, "--db", filepath.Join(t.TempDir(), "inbox.db"), "--read-header-timeout", "300ms")
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/as4")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /as4 HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.ReadAll(bufio.NewReader(conn))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a client that never sent its headers")
	}
	postReceipt(t, url)
	if code := stop(); code != clikit.ExitOK {
		t.Errorf("serve exited %d, want 0: %s", code, errs)
	}
}

func TestServeFlags(t *testing.T) {
	t.Parallel()
	_, errs, code := run(t, "serve", "--db", filepath.Join(t.TempDir(), "x.db"))
	if code != clikit.ExitUsage || !strings.Contains(errs, "no source: give --as4-listen") || !strings.Contains(errs, "--kafka-brokers") {
		t.Errorf("no source: code %d, %q", code, errs)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kafka-brokers", "127.0.0.1:1"}, "--kafka-topics is required with the kafka source"},
		{[]string{"--nats-url", "nats://127.0.0.1:1", "--nats-stream", "S"}, "--nats-consumer is required with the nats source"},
		{[]string{"--amqp-queue", "q"}, "--amqp-url is required with the amqp source"},
		{[]string{"--kafka-brokers", "b:1", "--kafka-topics", "t", "--kafka-group", "g", "--kafka-key", "body"}, `--kafka-key "body": use offset or header:NAME`},
		{[]string{"--sqs-queue-url", "http://q", "--sqs-key", "header:x"}, `--sqs-key "header:x"`},
		{[]string{"--amqp-url", "amqp://x", "--amqp-queue", "q", "--amqp-retry-window", "soon"}, "--amqp-retry-window"},
	} {
		_, errs, code := run(t, append([]string{"serve", "--db", filepath.Join(t.TempDir(), "x.db")}, tc.args...)...)
		if code != clikit.ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: code %d, %q; want %q", tc.args, code, errs, tc.want)
		}
	}
	_, errs, code = run(t, "serve", "--as4-listen", "127.0.0.1:0")
	if code != clikit.ExitUsage || !strings.Contains(errs, "--db is required") {
		t.Errorf("no --db: code %d, %q", code, errs)
	}
}

// TestServeFinishesRequestsInFlight: a request whose body is not sent yet
// when serve is told to stop is still answered with its receipt, and serve
// exits 0.
func TestServeFinishesRequestsInFlight(t *testing.T) {
	t.Parallel()
	url, stop, errs := startServe(t, "--db", filepath.Join(t.TempDir(), "inbox.db"))
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/as4")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST /as4 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/soap+xml\r\n" +
		"Expect: 100-continue\r\nContent-Length: " + strconv.Itoa(len(serveTestMessage)) + "\r\n\r\n"
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	// The server sends 100 Continue when the handler starts reading the
	// body: from then on the request is in flight.
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, " 100 ") {
		t.Fatalf("no 100 Continue: %q %v", line, err)
	}
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan int, 1)
	go func() { stopped <- stop() }()
	// The listener closing shows that the shutdown has begun.
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		select {
		case code := <-stopped:
			t.Fatalf("serve exited %d with a request in flight", code)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := conn.Write([]byte(serveTestMessage)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "eb:Receipt") {
		t.Errorf("in-flight request: %d\n%s", resp.StatusCode, body)
	}
	if code := <-stopped; code != clikit.ExitOK {
		t.Errorf("serve exited %d, want 0: %s", code, errs)
	}
}

// TestServeHealthReadyMetrics: --http-listen answers /healthz, /readyz and
// /metrics, where a duplicate shows in txinbox_duplicates_total.
func TestServeHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{lines: make(chan string, 64), logged: true}
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: out, Stderr: io.MultiWriter(errs, out), Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, env, []string{"serve", "--db", filepath.Join(t.TempDir(), "s.db"), "--as4-listen", "127.0.0.1:0",
			"--http-listen", "127.0.0.1:0", "--log-format", "json", "--retention", "7d"})
	}()
	var as4URL, opsURL string
	for as4URL == "" || opsURL == "" {
		select {
		case line := <-out.lines:
			if u, ok := strings.CutPrefix(line, "as4 endpoint listening on "); ok {
				as4URL = u
			}
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
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, `"database":"ok"`) {
		t.Errorf("/readyz = %d %q", code, body)
	}
	postReceipt(t, as4URL)
	postReceipt(t, as4URL)
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `txinbox_duplicates_total{scope="as4",source="as4"} 1`) ||
		!strings.Contains(body, `txinbox_messages_total{outcome="processed",scope="as4",source="as4"} 1`) {
		t.Errorf("/metrics = %d, missing the duplicate:\n%s", code, body)
	}
	if !strings.Contains(errs.String(), `"msg":"txinbox: purger started"`) {
		t.Errorf("no JSON log of the purger start: %s", errs)
	}
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Errorf("serve exited %d: %s", code, errs)
	}
}

func TestServeOpsFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ flag, want string }{
		{"--retention=0d", "--retention"}, {"--log-format=xml", "--log-format"}, {"--purge-interval=-1s", "--purge-interval"},
	} {
		_, errs, code := run(t, "serve", "--db", filepath.Join(t.TempDir(), "x.db"), "--as4-listen", "127.0.0.1:0", tc.flag)
		if code != clikit.ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: code %d, %q", tc.flag, code, errs)
		}
	}
}

// TestServeEffects: --effect outbox copies the payload into the outbox
// table once, --effect sql runs the configured statement once per new
// message, and a statement that does not prepare stops serve at start.
func TestServeEffects(t *testing.T) {
	t.Parallel()
	count := func(t *testing.T, path, q string) int {
		t.Helper()
		d, err := sqlitestore.Open(path, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		var n int
		if err := d.DB().QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Run("outbox", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "o.db")
		url, stop, errs := startServe(t, "--db", path, "--effect", "outbox", "--no-purge")
		postReceipt(t, url)
		postReceipt(t, url)
		if code := stop(); code != clikit.ExitOK {
			t.Fatalf("serve exited %d: %s", code, errs)
		}
		if n := count(t, path, `SELECT count(*) FROM txinbox_outbox WHERE CAST(payload AS TEXT) = '<invoice>42</invoice>'`); n != 1 {
			t.Errorf("%d outbox rows, want 1", n)
		}
	})
	t.Run("sql", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.db")
		d, err := sqlitestore.Open(path, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.DB().Exec(`CREATE TABLE received (scope TEXT, msgid TEXT, sender TEXT, action TEXT)`); err != nil {
			t.Fatal(err)
		}
		d.Close()
		url, stop, errs := startServe(t, "--db", path, "--effect", "sql", "--no-purge",
			"--effect-sql", "INSERT INTO received (scope, msgid, sender, action) VALUES ($1, $3, $4, $7)")
		postReceipt(t, url)
		postReceipt(t, url)
		if code := stop(); code != clikit.ExitOK {
			t.Fatalf("serve exited %d: %s", code, errs)
		}
		if n := count(t, path, `SELECT count(*) FROM received WHERE msgid = 'serve-1@test' AND sender = 'a' AND action = 'act'`); n != 1 {
			t.Errorf("%d rows from --effect-sql, want 1", n)
		}
	})
	t.Run("bad-statement", func(t *testing.T) {
		_, errs, code := run(t, "serve", "--db", filepath.Join(t.TempDir(), "b.db"), "--as4-listen", "127.0.0.1:0",
			"--effect", "sql", "--effect-sql", "INSERT INTO nowhere VALUES ($1)")
		if code != clikit.ExitUsage || !strings.Contains(errs, "--effect-sql statement 1") {
			t.Errorf("code %d, %q", code, errs)
		}
		_, errs, code = run(t, "serve", "--db", filepath.Join(t.TempDir(), "c.db"), "--as4-listen", "127.0.0.1:0", "--effect", "sql")
		if code != clikit.ExitUsage || !strings.Contains(errs, "needs at least one --effect-sql") {
			t.Errorf("code %d, %q", code, errs)
		}
		// new_messages exists only in a broker batch's claim: the AS4
		// endpoint, which runs its statements per message, refuses it.
		_, errs, code = run(t, "serve", "--db", filepath.Join(t.TempDir(), "d.db"), "--as4-listen", "127.0.0.1:0",
			"--effect", "sql", "--effect-sql", "INSERT INTO received SELECT scope, message_id FROM new_messages")
		if code != clikit.ExitUsage || !strings.Contains(errs, "new_messages does not exist") {
			t.Errorf("set-based statements with AS4: code %d, %q", code, errs)
		}
	})
}

// TestServeRefusesRetentionShorterThanRetryWindow: the retention must cover
// how long senders may resend, unless the operator accepts it.
func TestServeRefusesRetentionShorterThanRetryWindow(t *testing.T) {
	t.Parallel()
	_, errs, code := run(t, "serve", "--db", filepath.Join(t.TempDir(), "r.db"), "--as4-listen", "127.0.0.1:0",
		"--retention", "3d", "--retry-window", "7d")
	if code != clikit.ExitUsage || !strings.Contains(errs, "--retention 3d is shorter than --retry-window 7d") {
		t.Errorf("code %d, %q", code, errs)
	}
	url, stop, errs2 := startServe(t, "--db", filepath.Join(t.TempDir(), "a.db"), "--retention", "3d", "--retry-window", "7d",
		"--accept-short-retention", "--log-format", "json")
	postReceipt(t, url)
	if code := stop(); code != clikit.ExitOK || !strings.Contains(errs2.String(), "accepted by --accept-short-retention") {
		t.Errorf("accepted: exit %d, log %s", code, errs2)
	}
}

// TestServeEffectSQLWithAGapOnPostgres: a statement that names $1, $2 and
// $7 only, and casts $10, starts on PostgreSQL (the documented types are
// declared, so the skipped $3-$6 need no inference) and runs for each new
// AS4 message, once.
func TestServeEffectSQLWithAGapOnPostgres(t *testing.T) {
	t.Parallel()
	admin := testdb.Require(t)
	schema := testdb.NewSchema(t, admin)
	if _, err := admin.Exec(context.Background(), `CREATE TABLE `+schema+`.received (scope text, key text, action text, at timestamptz, body bytea)`); err != nil {
		t.Fatal(err)
	}
	url, stop, errs := startServe(t, "--db", testdb.URL(), "--schema", schema, "--effect", "sql", "--no-purge",
		"--effect-sql", "INSERT INTO "+schema+".received (scope, key, action) VALUES ($1, $2, $7)",
		"--effect-sql", "UPDATE "+schema+".received SET at = $10, body = $9 WHERE key = $2")
	postReceipt(t, url)
	postReceipt(t, url)
	if code := stop(); code != clikit.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errs)
	}
	var n int
	err := admin.QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.received
		WHERE action = 'act' AND at > now() - interval '1 hour' AND convert_from(body, 'UTF8') = '<invoice>42</invoice>'`).Scan(&n)
	if err != nil || n != 1 {
		t.Errorf("%d rows from --effect-sql (%v), want 1", n, err)
	}
}

// TestServeAgreementFlags: --as4-partner/--as4-self accept the partner's
// messages; --as4-agreements with another partner refuses them with
// EBMS:0010; half a pair is a usage error.
func TestServeAgreementFlags(t *testing.T) {
	t.Parallel()
	url, stop, errs := startServe(t, "--db", filepath.Join(t.TempDir(), "inbox.db"), "--as4-partner", "a", "--as4-self", "b")
	postReceipt(t, url)
	if code := stop(); code != clikit.ExitOK {
		t.Errorf("serve exited %d: %s", code, errs)
	}
	file := filepath.Join(t.TempDir(), "agreements.yaml")
	if err := os.WriteFile(file, []byte("- {name: other, from: {id: z}, to: {id: b}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url, stop, errs = startServe(t, "--db", filepath.Join(t.TempDir(), "inbox.db"), "--as4-agreements", file, "--as4-max-concurrent", "2")
	resp, err := http.Post(url, "application/soap+xml", strings.NewReader(serveTestMessage))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `errorCode="EBMS:0010"`) {
		t.Errorf("message outside the agreements: %d\n%s", resp.StatusCode, body)
	}
	if code := stop(); code != clikit.ExitOK {
		t.Errorf("serve exited %d: %s", code, errs)
	}
	for _, args := range [][]string{{"--as4-partner", "a"}, {"--as4-require-signature"}} {
		_, errs, code := run(t, append([]string{"serve", "--db", filepath.Join(t.TempDir(), "x.db"), "--as4-listen", "127.0.0.1:0"}, args...)...)
		if code != clikit.ExitUsage || !strings.Contains(errs, "--as4-") {
			t.Errorf("%v: code %d, %q", args, code, errs)
		}
	}
}
