// Package http is an outbox target that POSTs each row to a URL, with the
// row's stable id as the Idempotency-Key header so that the receiver can
// drop the copies at-least-once delivery makes.
//
// A 2xx answer confirms the row (its body, up to MaxReceipt bytes, is the
// receipt). 408, 425, 429, 5xx and network errors are retried, no sooner
// than a Retry-After header asks. Any other answer fails the row for good
// with the status and the start of the body.
package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/txinbox/txinbox/outbox"
)

// Config configures a Target.
type Config struct {
	// URL receives the POSTs. Required: an http or https URL.
	URL string
	// Client sends the requests. Defaults to a client with a 30s timeout.
	Client *http.Client
	// Header is added to every request (authorization, say).
	Header http.Header
	// MaxReceipt is how much of a 2xx body is kept as the receipt.
	// Defaults to 64 KiB; a longer body is cut.
	MaxReceipt int
}

// Target POSTs outbox rows. It is safe for concurrent use.
type Target struct {
	cfg Config
}

var _ outbox.Target = (*Target)(nil)

// errSnippet is how much of a refusing answer's body goes into the error.
const errSnippet = 512

// New returns a Target for cfg.
func New(cfg Config) (*Target, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("outbox http target: Config.URL %q: want an http:// or https:// URL", cfg.URL)
	}
	if cfg.MaxReceipt < 0 {
		return nil, fmt.Errorf("outbox http target: Config.MaxReceipt %d must not be negative", cfg.MaxReceipt)
	}
	if cfg.MaxReceipt == 0 {
		cfg.MaxReceipt = 64 << 10
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	return &Target{cfg: cfg}, nil
}

// Send POSTs m's payload with Content-Type from the row, the row's headers,
// and Idempotency-Key: m.StableID().
func (t *Target) Send(ctx context.Context, m *outbox.Message) (outbox.Receipt, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.cfg.URL, bytes.NewReader(m.Payload))
	if err != nil {
		return nil, outbox.Permanent(err)
	}
	for k, vs := range t.cfg.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	// The row's headers replace the configured ones of the same name;
	// a repeated key is sent repeated.
	fromRow := map[string]bool{}
	for i, h := range m.Headers {
		if !httpguts.ValidHeaderFieldName(h.Key) || !httpguts.ValidHeaderFieldValue(h.Value) {
			return nil, outbox.Permanent(fmt.Errorf("row %d: header %d (%q) is not a valid HTTP header name or value", m.ID, i, h.Key))
		}
		k := http.CanonicalHeaderKey(h.Key)
		if !fromRow[k] {
			req.Header.Del(k)
			fromRow[k] = true
		}
		req.Header.Add(k, h.Value)
	}
	if m.ContentType != "" {
		req.Header.Set("Content-Type", m.ContentType)
	}
	req.Header.Set("Idempotency-Key", m.StableID())
	resp, err := t.cfg.Client.Do(req)
	if err != nil {
		return nil, err // network: retried
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.cfg.MaxReceipt)))
		if err != nil {
			return nil, fmt.Errorf("reading the %d answer: %w", resp.StatusCode, err)
		}
		return body, nil
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, errSnippet))
	err = fmt.Errorf("POST %s: %s: %s", t.cfg.URL, resp.Status, strings.TrimSpace(string(snippet)))
	if !retryable(resp.StatusCode) {
		return nil, outbox.Permanent(err)
	}
	if d := retryAfter(resp.Header.Get("Retry-After"), time.Now()); d > 0 {
		return nil, outbox.RetryAfter(err, d)
	}
	return nil, err
}

func retryable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

// retryAfter reads a Retry-After value: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0)
	}
	return 0
}
