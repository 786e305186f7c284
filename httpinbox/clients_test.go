package httpinbox_test

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/httpinbox"
)

// truncated sends a body shorter than its Content-Length and closes its
// side: the server reads a truncated body and stores nothing.
func truncated(t *testing.T, url string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	_, err = c.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nIdempotency-Key: \"cut\"\r\nContent-Length: 500\r\n\r\n" + strings.Repeat("t", 100)))
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite() //nolint:errcheck
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return // the server may just close: what matters is nothing stored
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("truncated body: %d, want 400", resp.StatusCode)
	}
}

// TestCurl: curl, a client of its own, gets the answer and then its
// replay, byte for byte.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl on PATH")
	}
	e := pgEnv(t)
	srv := e.route(e.inbox(httpinbox.Config[pgx.Tx]{}), httpinbox.Route[pgx.Tx]{Name: "orders"}, e.orders())
	run := func() (string, string) {
		out, err := exec.Command(curl, "-sS", "-D", "-", "-X", "POST", "-H", `Idempotency-Key: "curl-1"`,
			"--data-binary", "book", srv.URL+"/orders").Output()
		if err != nil {
			t.Fatalf("curl: %v", err)
		}
		head, body, _ := strings.Cut(string(out), "\r\n\r\n")
		return head, body
	}
	head1, body1 := run()
	head2, body2 := run()
	if !strings.HasPrefix(head1, "HTTP/1.1 201") || strings.Contains(head1, "Idempotent-Replayed") {
		t.Errorf("first: %s", head1)
	}
	if !strings.HasPrefix(head2, "HTTP/1.1 201") || !strings.Contains(head2, "Idempotent-Replayed: true") || body1 != body2 {
		t.Errorf("second: %s\n%s, want the replay of %s", head2, body2, body1)
	}
	if got := e.effects(); got["book"] != 1 {
		t.Errorf("effects %v", got)
	}
}

// TestNodeFetchRetriesALostAnswer: the first answer is lost after the
// commit (the connection is cut before a byte of it is sent); Node's
// fetch, retrying with the same key (testdata/retry.mjs), gets the
// stored answer, and the effect happened once.
func TestNodeFetchRetriesALostAnswer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	runCases(t, []storeCase{{"lost answer", func(t *testing.T, e *env[pgx.Tx]) { nodeRetry(t, node, e) },
		func(t *testing.T, e *env[*sql.Tx]) { nodeRetry(t, node, e) }}})
}

func nodeRetry[TTx any](t *testing.T, node string, e *env[TTx]) {
	rh, err := e.inbox(httpinbox.Config[TTx]{}).Handler(httpinbox.Route[TTx]{Name: "orders"}, e.orders())
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int32
	var lost atomic.Pointer[[]byte]
	srv := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 1 {
			rh.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rh.ServeHTTP(rec, r) // committed; its answer goes nowhere
		b := rec.Body.Bytes()
		lost.Store(&b)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	out, err := exec.Command(node, "testdata/retry.mjs", srv.URL+"/orders", "node-1", "book").Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got struct {
		Attempts int
		Status   int
		Replayed string
		Body     string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %s: %v", out, err)
	}
	if got.Attempts != 2 || got.Status != 201 || got.Replayed != "true" || got.Body != string(*lost.Load()) {
		t.Errorf("node's answer %+v, want attempt 2, 201, replayed, body %s", got, *lost.Load())
	}
	if n := e.effects()["book"]; n != 1 {
		t.Errorf("effects %d, want 1", n)
	}
}

// TestInFlightAcrossProcesses: two inboxes (as two processes would) on one
// inbox of each store with a store.InFlightLocker (PostgreSQL on pgx and
// on database/sql, MariaDB); while the first runs a key's handler, the
// second answers 409 at once instead of waiting for it.
func TestInFlightAcrossProcesses(t *testing.T) {
	t.Run("pgstore", func(t *testing.T) { testInFlight(t, pgEnv(t)) })
	t.Run("pgdbstore", func(t *testing.T) { testInFlight(t, pgdbEnv(t)) })
	t.Run("mysqlstore", func(t *testing.T) { testInFlight(t, mysqlEnv(t)) })
}

func testInFlight[TTx any](t *testing.T, e *env[TTx]) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		e.orders().ServeHTTP(w, r)
	})
	one := e.route(e.inbox(httpinbox.Config[TTx]{}), httpinbox.Route[TTx]{Name: "orders"}, slow)
	two := e.route(e.inbox(httpinbox.Config[TTx]{}), httpinbox.Route[TTx]{Name: "orders"}, e.orders())
	first := make(chan answer, 1)
	go func() { first <- post(t, one.URL, "book", `Idempotency-Key: "busy"`) }()
	<-entered
	second := make(chan answer, 1)
	go func() { second <- post(t, two.URL, "book", `Idempotency-Key: "busy"`) }()
	var a answer
	select {
	case a = <-second:
		close(release)
	case <-time.After(20 * time.Second):
		close(release) // the second waits for the first: let both end, then fail
		a = <-second
		t.Errorf("the second process waited for the first to commit, then answered %d", a.status)
	}
	if a.status != http.StatusConflict || !strings.HasSuffix(a.problem(t).Type, "#in-flight") || a.header.Get("Retry-After") == "" {
		t.Errorf("second process: %d %v %s, want 409 in-flight with Retry-After", a.status, a.header, a.body)
	}
	f := <-first
	if b := post(t, two.URL, "book", `Idempotency-Key: "busy"`); b.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(b.body, f.body) {
		t.Errorf("after the first committed: %d %s, want the replay of %s", b.status, b.body, f.body)
	}
	if n := e.effects()["book"]; n != 1 {
		t.Errorf("effects %d", n)
	}
}
