// Package webhooksig verifies the signatures webhook senders put on their
// deliveries: GitHub's X-Hub-Signature-256, Stripe's Stripe-Signature
// (with its timestamp tolerance, against replays) and a generic
// HMAC-SHA256 in a header of your choice (hex or base64, as Shopify's
// X-Shopify-Hmac-Sha256). Each is an HMAC-SHA256 of the raw body (Stripe:
// of the timestamp, a dot and the body) with a shared secret; the
// comparison is constant-time.
//
// A Verifier's error is an *Error whose Reason is one of the sentinel
// errors (ErrMissing, ErrMalformed, ErrMismatch, ErrExpired); txinbox
// serve's webhook ingress answers every one with 401 and stores nothing.
package webhooksig

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Verifier checks the signature of a delivery: its headers and its body
// as received, byte for byte.
type Verifier interface {
	Verify(h http.Header, body []byte) error
}

// The reasons of an *Error.
var (
	// ErrMissing: the signature header is absent or empty.
	ErrMissing = errors.New("the signature header is missing")
	// ErrMalformed: the header cannot be read (no known scheme, bad hex
	// or base64, no timestamp).
	ErrMalformed = errors.New("the signature header is malformed")
	// ErrMismatch: no signature in the header matches the body.
	ErrMismatch = errors.New("the signature does not match the body")
	// ErrExpired: the signed timestamp is outside the tolerance (a
	// replay, or a clock far off).
	ErrExpired = errors.New("the signed timestamp is outside the tolerance")
)

// Error is a refused signature: which scheme refused it, why (one of the
// sentinels) and a detail that never includes the secret or an expected
// signature.
type Error struct {
	Scheme string // "github", "stripe" or "hmac"
	Reason error
	Detail string
}

// Error says which scheme refused the signature and why.
func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("webhooksig: %s: %v", e.Scheme, e.Reason)
	}
	return fmt.Sprintf("webhooksig: %s: %v: %s", e.Scheme, e.Reason, e.Detail)
}

// Unwrap returns the reason, for errors.Is.
func (e *Error) Unwrap() error { return e.Reason }

// Sign returns the HMAC-SHA256 of the parts with secret.
func Sign(secret []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, secret)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// GitHub verifies GitHub's X-Hub-Signature-256: "sha256=" and the hex
// HMAC-SHA256 of the body with the webhook's secret.
type GitHub struct {
	// Secret is the webhook's secret. Required.
	Secret []byte
}

// GitHubHeader is the header GitHub signs deliveries in.
const GitHubHeader = "X-Hub-Signature-256"

// Verify checks h's X-Hub-Signature-256 against body.
func (g GitHub) Verify(h http.Header, body []byte) error {
	mac, err := ParseGitHub(h.Get(GitHubHeader))
	if err != nil {
		return err
	}
	if !hmac.Equal(mac, Sign(g.Secret, body)) {
		return &Error{Scheme: "github", Reason: ErrMismatch}
	}
	return nil
}

// ParseGitHub reads an X-Hub-Signature-256 value: "sha256=" and 64 hex
// digits.
func ParseGitHub(v string) ([]byte, error) {
	if v == "" {
		return nil, &Error{Scheme: "github", Reason: ErrMissing, Detail: GitHubHeader}
	}
	hexMAC, ok := strings.CutPrefix(v, "sha256=")
	if !ok {
		return nil, &Error{Scheme: "github", Reason: ErrMalformed, Detail: `the value does not start with "sha256="`}
	}
	mac, err := hex.DecodeString(hexMAC)
	if err != nil || len(mac) != sha256.Size {
		return nil, &Error{Scheme: "github", Reason: ErrMalformed, Detail: "the signature is not 64 hex digits"}
	}
	return mac, nil
}

// Encoding is how a generic HMAC header writes the signature.
type Encoding string

// The encodings of HMAC.Encoding.
const (
	Hex    Encoding = "hex"
	Base64 Encoding = "base64"
)

// HMAC verifies a generic HMAC-SHA256 of the body, in a header of your
// choice.
type HMAC struct {
	// Secret is the shared secret. Required.
	Secret []byte
	// Header holds the signature, e.g. "X-Shopify-Hmac-Sha256".
	// Required.
	Header string
	// Encoding is Hex or Base64 (standard, padded or not). Defaults to
	// Hex.
	Encoding Encoding
	// Prefix is text before the signature in the header, e.g.
	// "sha256=". Defaults to none.
	Prefix string
}

// Verify checks h's Header against body.
func (c HMAC) Verify(h http.Header, body []byte) error {
	mac, err := c.Parse(h.Get(c.Header))
	if err != nil {
		return err
	}
	if !hmac.Equal(mac, Sign(c.Secret, body)) {
		return &Error{Scheme: "hmac", Reason: ErrMismatch, Detail: c.Header}
	}
	return nil
}

// Parse reads the header's value: Prefix and the signature in Encoding.
func (c HMAC) Parse(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, &Error{Scheme: "hmac", Reason: ErrMissing, Detail: c.Header}
	}
	s, ok := strings.CutPrefix(v, c.Prefix)
	if !ok {
		return nil, &Error{Scheme: "hmac", Reason: ErrMalformed, Detail: fmt.Sprintf("%s does not start with %q", c.Header, c.Prefix)}
	}
	var mac []byte
	var err error
	switch c.Encoding {
	case Base64:
		mac, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	case Hex, "":
		mac, err = hex.DecodeString(s)
	default:
		return nil, &Error{Scheme: "hmac", Reason: ErrMalformed, Detail: fmt.Sprintf("unknown encoding %q", c.Encoding)}
	}
	if err != nil || len(mac) != sha256.Size {
		return nil, &Error{Scheme: "hmac", Reason: ErrMalformed, Detail: fmt.Sprintf("%s is not a %s HMAC-SHA256", c.Header, cmp.Or(c.Encoding, Hex))}
	}
	return mac, nil
}
