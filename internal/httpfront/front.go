// Package httpfront is the hardened front of the HTTP endpoints serve
// runs (the AS4 endpoint, the webhook ingress): it reads a request's body
// whole before the handler runs, so a slow client holds no processing
// slot of the handler, and bounds what hostile clients can hold:
//
//   - a minimum data rate: after a grace period, a body that arrives
//     slower than MinBodyRate bytes a second is cut (408);
//   - requests per client (its IP address) at once (429);
//   - the bytes of bodies being read or answered, all clients together
//     (503 with Retry-After), counted as they arrive, not as announced,
//     so a Content-Length that never comes reserves nothing;
//   - the body's size (413).
//
// The handler gets the body as a reader over the bytes read (Body returns
// them without a copy), with ContentLength set.
package httpfront

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultMinBodyRate          = 16 << 10 // bytes a second
	DefaultGrace                = 10 * time.Second
	DefaultMaxPerClient         = 16
	DefaultMaxBodyBytesInFlight = 256 << 20
	DefaultMaxBodyBytes         = 50 << 20
)

// Config configures a Front. The zero value takes every default.
type Config struct {
	// MaxBodyBytes is the largest body read; a larger one is answered
	// 413 (at once when its Content-Length says so). Defaults to
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MinBodyRate is the slowest a body may arrive after Grace, in bytes
	// a second on average since the request's headers: a slower one is
	// cut with 408 and the connection closed. Defaults to
	// DefaultMinBodyRate (16 KiB/s: 50 MiB in under an hour); negative:
	// no minimum.
	MinBodyRate int64
	// Grace is how long a body may take before MinBodyRate applies.
	// Defaults to DefaultGrace.
	Grace time.Duration
	// MaxPerClient is how many requests one client (ClientOf) may have
	// being read or answered at once; more get 429 with Retry-After.
	// Defaults to DefaultMaxPerClient.
	MaxPerClient int
	// MaxBodyBytesInFlight bounds the bytes of the bodies being read or
	// answered, all clients together; a request that would pass it gets
	// 503 with Retry-After. Defaults to DefaultMaxBodyBytesInFlight.
	MaxBodyBytesInFlight int64
	// ClientOf names the client of a request for MaxPerClient. Defaults
	// to the IP address of its RemoteAddr (behind a proxy, every request
	// comes from the proxy: name the client from what the proxy adds).
	ClientOf func(*http.Request) string
	// Refuse writes a refusal. Defaults to a text/plain answer.
	Refuse func(w http.ResponseWriter, r *http.Request, status int, detail string)
}

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MinBodyRate == 0 {
		c.MinBodyRate = DefaultMinBodyRate
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.MaxPerClient == 0 {
		c.MaxPerClient = DefaultMaxPerClient
	}
	if c.MaxBodyBytesInFlight == 0 {
		c.MaxBodyBytesInFlight = DefaultMaxBodyBytesInFlight
	}
	if c.ClientOf == nil {
		c.ClientOf = remoteIP
	}
	if c.Refuse == nil {
		c.Refuse = refuseText
	}
	return c
}

// Validate reports the first field with an invalid value.
func (c Config) Validate() error {
	switch {
	case c.MaxBodyBytes < 0:
		return errors.New("httpfront: MaxBodyBytes must not be negative")
	case c.Grace < 0:
		return errors.New("httpfront: Grace must not be negative")
	case c.MaxPerClient < 0:
		return errors.New("httpfront: MaxPerClient must not be negative")
	case c.MaxBodyBytesInFlight < 0:
		return errors.New("httpfront: MaxBodyBytesInFlight must not be negative")
	}
	return nil
}

// Front is the hardened front of one handler.
type Front struct {
	cfg  Config
	next http.Handler

	mu       sync.Mutex
	clients  map[string]int
	inFlight int64 // bytes reserved by bodies being read or answered
}

// New returns a Front over next.
func New(cfg Config, next http.Handler) *Front {
	return &Front{cfg: cfg.withDefaults(), next: next, clients: map[string]int{}}
}

type bodyKey struct{}

// Body returns the body a Front read for r, without a copy.
func Body(r *http.Request) ([]byte, bool) {
	b, ok := r.Context().Value(bodyKey{}).([]byte)
	return b, ok
}

// ServeHTTP reads the body within the limits, then runs the handler.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	client := f.cfg.ClientOf(r)
	if !f.enter(client) {
		w.Header().Set("Retry-After", "1")
		f.cfg.Refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("this client has its limit of %d requests in flight", f.cfg.MaxPerClient))
		return
	}
	defer f.leave(client)
	if r.ContentLength > f.cfg.MaxBodyBytes {
		f.cfg.Refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than the limit of %d bytes", f.cfg.MaxBodyBytes))
		return
	}
	rd := &bodyReader{f: f, rc: http.NewResponseController(w), start: time.Now()}
	defer rd.release()
	body, status, detail := rd.read(r)
	if status != 0 {
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		if status == http.StatusRequestTimeout {
			w.Header().Set("Connection", "close")
		}
		f.cfg.Refuse(w, r, status, detail)
		return
	}
	rd.rc.SetReadDeadline(time.Time{}) //nolint:errcheck // a connection without deadlines keeps the server's
	r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	f.next.ServeHTTP(w, r)
}

func (f *Front) enter(client string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clients[client] >= f.cfg.MaxPerClient {
		return false
	}
	f.clients[client]++
	return true
}

func (f *Front) leave(client string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clients[client]--; f.clients[client] <= 0 {
		delete(f.clients, client)
	}
}

// reserve takes n more bytes of MaxBodyBytesInFlight.
func (f *Front) reserve(n int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inFlight+n > f.cfg.MaxBodyBytesInFlight {
		return false
	}
	f.inFlight += n
	return true
}

func (f *Front) unreserve(n int64) {
	f.mu.Lock()
	f.inFlight -= n
	f.mu.Unlock()
}

// InFlight returns the body bytes reserved now, for tests and metrics.
func (f *Front) InFlight() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight
}

// chunk is a body's first buffer, and the most read at once.
const chunk = 64 << 10

// bodyReader reads one request's body.
type bodyReader struct {
	f        *Front
	rc       *http.ResponseController
	start    time.Time
	reserved int64
}

func (b *bodyReader) release() { b.f.unreserve(b.reserved) }

// read returns the body, or the status and detail of a refusal. The
// buffer grows by doubling as bytes arrive, up to the announced length,
// and its capacity is what is reserved: a client that announces 50 MiB
// and sends 10 bytes holds 64 KiB.
func (b *bodyReader) read(r *http.Request) ([]byte, int, string) {
	max := b.f.cfg.MaxBodyBytes
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than the limit of %d bytes", max)
			}
			var ok bool
			if buf, ok = b.grow(buf, r.ContentLength); !ok {
				return nil, http.StatusServiceUnavailable, "the endpoint holds its limit of request bodies in flight; send the request again later"
			}
		}
		if rate := b.f.cfg.MinBodyRate; rate > 0 {
			due := b.start.Add(b.f.cfg.Grace + time.Duration(float64(len(buf)+1)/float64(rate)*float64(time.Second)))
			b.rc.SetReadDeadline(due) //nolint:errcheck // where deadlines are not supported, the server's ReadTimeout still bounds the read
		}
		n, err := r.Body.Read(buf[len(buf):min(cap(buf), len(buf)+chunk)])
		buf = buf[:len(buf)+n]
		switch {
		case int64(len(buf)) > max:
			return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than the limit of %d bytes", max)
		case errors.Is(err, io.EOF):
			return buf, 0, ""
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, http.StatusRequestTimeout, fmt.Sprintf("the body arrived slower than %d bytes a second", b.f.cfg.MinBodyRate)
		case err != nil:
			return nil, http.StatusBadRequest, "reading the body: " + err.Error()
		}
	}
}

// grow returns buf with more capacity (doubled, at most the announced
// length plus one byte, for the read that finds the end, and the limit
// plus one), reserving it.
func (b *bodyReader) grow(buf []byte, announced int64) ([]byte, bool) {
	newCap := max(2*int64(cap(buf)), chunk)
	if announced >= 0 {
		newCap = min(newCap, announced+1)
	}
	newCap = min(newCap, b.f.cfg.MaxBodyBytes+1)
	if !b.f.reserve(newCap - int64(cap(buf))) {
		return buf, false
	}
	b.reserved += newCap - int64(cap(buf))
	out := make([]byte, len(buf), newCap)
	copy(out, buf)
	return out, true
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func refuseText(w http.ResponseWriter, _ *http.Request, status int, detail string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(detail)+1))
	w.WriteHeader(status)
	io.WriteString(w, detail+"\n") //nolint:errcheck // the client may be gone
}
