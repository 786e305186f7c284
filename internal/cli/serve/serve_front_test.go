package serve_test

import (
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// slowUploads opens n connections from the loopback address from (Linux
// routes all of 127/8 to lo) that send the headers of an AS4 POST
// announcing a 1 MB body and one byte of it, and then nothing more. The
// returned func closes them.
func slowUploads(t *testing.T, host, from string, n int) func() {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	var conns []net.Conn
	for range n {
		c, err := d.Dial("tcp", host)
		if err != nil {
			t.Fatalf("slow upload %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /as4 HTTP/1.1\r\nHost: %s\r\nContent-Type: application/soap+xml\r\nContent-Length: 1000000\r\n\r\n<", host)
	}
	return func() {
		for _, c := range conns {
			c.Close()
		}
	}
}

// TestSlowUploadsHoldNoSlot: 200 uploads that trickle (from another
// client address) do not keep a partner from being answered: the front
// reads bodies before the AS4 endpoint takes one of its 16 slots, and
// one client has at most --max-requests-per-client requests in flight.
// Before the front, every partner got 503 while they trickled.
func TestSlowUploadsHoldNoSlot(t *testing.T) {
	url, stop, errs := startServe(t, "--db", filepath.Join(t.TempDir(), "inbox.db"), "--no-purge")
	defer func() {
		if code := stop(); code != clikit.ExitOK {
			t.Errorf("serve exited %d: %s", code, errs)
		}
	}()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	closeAll := slowUploads(t, u.Host, "127.0.0.2", 200)
	defer closeAll()
	// A request of the slow client beyond its limit is refused at once.
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /as4 HTTP/1.1\r\nHost: %s\r\nContent-Type: application/soap+xml\r\nContent-Length: 10\r\n\r\n0123456789", u.Host)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	head, _ := io.ReadAll(io.LimitReader(c, 12))
	if !strings.HasPrefix(string(head), "HTTP/1.1 429") {
		t.Errorf("the slow client's 201st request: %q, want 429", head)
	}
	for range 3 {
		postReceipt(t, url)
	}
}
