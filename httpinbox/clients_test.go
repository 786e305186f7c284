package httpinbox_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
