package httpfront_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/internal/httpfront"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo answers with the length of the body it got and whether Body had
// it.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	held, ok := httpfront.Body(r)
	fmt.Fprintf(w, "%d %v", len(b), ok && bytes.Equal(held, b))
})

func serve(t *testing.T, cfg httpfront.Config) (*httptest.Server, *httpfront.Front) {
	f := httpfront.New(cfg, echo)
	s := httptest.NewServer(f)
	t.Cleanup(s.Close)
	return s, f
}

// send writes a request by hand (the body in pieces, pause between
// them) and returns the answer's status line.
func send(t *testing.T, addr string, announced int, pieces []string, pause time.Duration) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", announced)
	for _, p := range pieces {
		if _, err := io.WriteString(c, p); err != nil {
			break // the server cut the connection
		}
		time.Sleep(pause) // the client's pace is what is tested
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(c)
	line, _, _ := strings.Cut(string(b), "\r\n")
	return line
}

func TestBodyRead(t *testing.T) {
	s, f := serve(t, httpfront.Config{})
	body := strings.Repeat("x", 300<<10)
	resp, err := http.Post(s.URL, "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != fmt.Sprintf("%d true", len(body)) {
		t.Fatalf("handler got %q", b)
	}
	// Chunked (no Content-Length) too.
	resp, err = http.Post(s.URL, "text/plain", struct{ io.Reader }{strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != fmt.Sprintf("%d true", len(body)) {
		t.Fatalf("handler got %q (chunked)", b)
	}
	if n := f.InFlight(); n != 0 {
		t.Fatalf("%d bytes still reserved after the requests", n)
	}
}

// TestSlowBodyCut: a body slower than MinBodyRate after Grace is cut with
// 408; one at the rate passes.
func TestSlowBodyCut(t *testing.T) {
	s, _ := serve(t, httpfront.Config{MinBodyRate: 200, Grace: 300 * time.Millisecond})
	addr := s.Listener.Addr().String()
	slow := make([]string, 40) // 40 bytes at 20 bytes a second
	for i := range slow {
		slow[i] = "x"
	}
	if got := send(t, addr, len(slow), slow, 50*time.Millisecond); !strings.Contains(got, " 408 ") {
		t.Errorf("slow body: %q, want 408", got)
	}
	if got := send(t, addr, 40, []string{strings.Repeat("x", 20), strings.Repeat("x", 20)}, 50*time.Millisecond); !strings.Contains(got, " 200 ") {
		t.Errorf("body at the rate: %q, want 200", got)
	}
}

// TestLimits: the body's size (413, announced or not), requests per
// client (429) and body bytes in flight (503), counted as they arrive:
// announcing much reserves nothing.
func TestLimits(t *testing.T) {
	s, f := serve(t, httpfront.Config{MaxBodyBytes: 100 << 10, MaxPerClient: 2, MaxBodyBytesInFlight: 200 << 10})
	addr := s.Listener.Addr().String()
	if got := send(t, addr, 200<<10, nil, 0); !strings.Contains(got, " 413 ") {
		t.Errorf("announced too large: %q", got)
	}
	resp, err := http.Post(s.URL, "text/plain", struct{ io.Reader }{strings.NewReader(strings.Repeat("x", 101<<10))})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked too large: %d", resp.StatusCode)
	}
	// Two stalled requests announcing the limit hold 64 KiB each.
	var stalled []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\nx", 100<<10)
		stalled = append(stalled, c)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.InFlight() != 2*64<<10 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling the front's counter until both are read
	}
	if n := f.InFlight(); n != 2*64<<10 {
		t.Fatalf("%d bytes reserved by two stalled requests, want %d", n, 2*64<<10)
	}
	if got := send(t, addr, 10, []string{"0123456789"}, 0); !strings.Contains(got, " 429 ") {
		t.Errorf("a third request of the client: %q, want 429", got)
	}
	// Another client (its own name) gets 503 once the bytes in flight
	// would pass the bound.
	s2, f2 := serve(t, httpfront.Config{MaxBodyBytesInFlight: 100 << 10, ClientOf: func(r *http.Request) string { return r.RemoteAddr }})
	c, err := net.Dial("tcp", s2.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", 90<<10, strings.Repeat("x", 70<<10))
	for f2.InFlight() < 90<<10 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := send(t, s2.Listener.Addr().String(), 20<<10, []string{strings.Repeat("y", 20<<10)}, 0); !strings.Contains(got, " 503 ") {
		t.Errorf("beyond the bytes in flight: %q, want 503 (%d reserved)", got, f2.InFlight())
	}
	for _, c := range stalled {
		c.Close()
	}
}
