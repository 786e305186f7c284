package httpinbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/txinbox/txinbox"
)

// KeyRule says where a route's requests carry their idempotency key.
// The zero KeyRule is IdempotencyKey().
type KeyRule struct {
	header string // a plain header; "" with field "" is Idempotency-Key
	field  string // a top-level field of a JSON object body
}

// IdempotencyKey is the rule of draft-ietf-httpapi-idempotency-key-header:
// one Idempotency-Key header field holding a Structured Field String
// (ParseIdempotencyKey).
func IdempotencyKey() KeyRule { return KeyRule{} }

// HeaderKey reads the key from a provider's own header, taken as it is
// (visible ASCII): GitHub's X-GitHub-Delivery, Shopify's
// X-Shopify-Webhook-Id. More than one field line is an error.
func HeaderKey(name string) KeyRule { return KeyRule{header: http.CanonicalHeaderKey(name)} }

// JSONFieldKey reads the key from a top-level string field of the JSON
// object body (Stripe's event "id"). A body that is no JSON object, or a
// field that is not a string, is an invalid key.
func JSONFieldKey(field string) KeyRule { return KeyRule{field: field} }

// String names the rule, for problem details and logs.
func (k KeyRule) String() string {
	switch {
	case k.field != "":
		return "the JSON body's field " + strconvQuote(k.field)
	case k.header != "":
		return "the " + k.header + " header"
	}
	return "the Idempotency-Key header"
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// extract returns the request's key ("" when it has none) or why it is
// invalid.
func (k KeyRule) extract(r *http.Request, body []byte) (string, error) {
	switch {
	case k.field != "":
		return jsonField(body, k.field)
	case k.header != "":
		vs := r.Header.Values(k.header)
		switch len(vs) {
		case 0:
			return "", nil
		case 1:
			return strings.Trim(vs[0], " \t"), checkPlainKey(strings.Trim(vs[0], " \t"))
		}
		return "", keyErr("%d %s header fields; send exactly one", len(vs), k.header)
	}
	return ParseIdempotencyKey(r.Header.Values("Idempotency-Key"))
}

func jsonField(body []byte, field string) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return "", keyErr("the body is no JSON object, so it has no %q field", field)
	}
	raw, ok := obj[field]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", keyErr("the body's field %q is not a string", field)
	}
	return s, checkPlainKey(s)
}

// Route is one idempotent endpoint: how its requests are keyed, scoped and
// bounded. Name is required; every other field has a default.
type Route[TTx any] struct {
	// Name names the route in the inbox: its keys' scope is
	// Config.Scope + ":" + Name, so two routes never share a key.
	// Required: visible ASCII, at most 64 bytes.
	Name string
	// Key says where requests carry their key. Defaults to
	// IdempotencyKey().
	Key KeyRule
	// Optional lets requests without a key through to the handler without
	// the inbox (no transaction in their context: TxFromContext reports
	// false). Defaults to false: a request without a key is refused with
	// 400.
	Optional bool
	// Identity returns the caller's identity (an API key's id, a
	// client certificate's subject, a webhook provider's account), so
	// that a key is scoped to its caller: a caller never gets another's
	// stored response (the draft's security considerations). An error
	// refuses the request with 401. Defaults to every caller being one.
	Identity func(r *http.Request) (string, error)
	// FingerprintHeaders names request headers that, with the method, the
	// path and query and the body's SHA-256, make the request's
	// fingerprint: the same key with another fingerprint is refused with
	// 422. Defaults to none.
	FingerprintHeaders []string
	// MaxKeyBytes bounds the key's length; a longer key is refused with
	// 400. Defaults to 255; at most 1024.
	MaxKeyBytes int
	// MaxBodyBytes bounds the request body, read whole before anything is
	// claimed; a larger body is refused with 413. Defaults to 1 MiB.
	MaxBodyBytes int64
	// MaxReplyBytes bounds the response the handler writes, which is
	// stored to be replayed. It cannot be known before the handler runs:
	// a handler writing more gets ErrReplyTooLarge from Write, and the
	// request fails as a handler failure would (500, its effects rolled
	// back, an attempt counted), because an effect whose answer cannot be
	// replayed byte for byte must not commit. Defaults to 1 MiB.
	MaxReplyBytes int
	// Effect, when set, runs in the inbox transaction before the handler,
	// with the request as a message (Payload the body, Headers the request
	// headers but Authorization, Cookie and Proxy-Authorization): an
	// effect without Go (package effect's handler), or the handler's
	// work as a txinbox.HandlerFunc. Defaults to nil.
	Effect txinbox.HandlerFunc[TTx]
	// Keep reports whether a response status is an answer to store (its
	// effects commit, and retries get it replayed) or a failure (rolled
	// back, an attempt counted, the retry runs again). Defaults to
	// DefaultKeep.
	Keep func(status int) bool
}

// DefaultKeep keeps every status below 500 but 408 and 429, like
// Stripe's idempotency: a 4xx is the request's answer (a validation error
// stays one) and is replayed; a 5xx, a timeout or a rate limit is a
// failure that a retry runs again.
func DefaultKeep(status int) bool {
	return status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

func (rt Route[TTx]) withDefaults() Route[TTx] {
	if rt.MaxKeyBytes == 0 {
		rt.MaxKeyBytes = 255
	}
	if rt.MaxBodyBytes == 0 {
		rt.MaxBodyBytes = 1 << 20
	}
	if rt.MaxReplyBytes == 0 {
		rt.MaxReplyBytes = 1 << 20
	}
	if rt.Keep == nil {
		rt.Keep = DefaultKeep
	}
	return rt
}

func (rt Route[TTx]) validate() error {
	switch {
	case rt.Name == "" || len(rt.Name) > 64 || checkPlainKey(rt.Name) != nil:
		return errors.New("httpinbox: Route.Name: required, visible ASCII, at most 64 bytes")
	case rt.MaxKeyBytes < 1 || rt.MaxKeyBytes > 1024:
		return errors.New("httpinbox: Route.MaxKeyBytes: between 1 and 1024")
	case rt.MaxBodyBytes < 0 || rt.MaxReplyBytes < 0:
		return errors.New("httpinbox: Route.MaxBodyBytes, MaxReplyBytes: must not be negative")
	}
	return nil
}

// fingerprint is the SHA-256 of the method, the path and query, the chosen
// headers' values and the body's SHA-256, each length-prefixed.
func (rt Route[TTx]) fingerprint(r *http.Request, body []byte) []byte {
	h := sha256.New()
	part := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	part(r.Method)
	part(r.URL.EscapedPath())
	part(r.URL.RawQuery)
	for _, name := range rt.FingerprintHeaders {
		part(name)
		vs := r.Header.Values(name)
		part(fmt.Sprint(len(vs)))
		for _, v := range vs {
			part(v)
		}
	}
	b := sha256.Sum256(body)
	part(string(b[:]))
	return h.Sum(nil)
}

// messageID is the inbox id of key for the caller identity: the identity
// (query-escaped, or its SHA-256 when long) then "/" then the key.
func messageID(identity, key string) string {
	esc := url.QueryEscape(identity)
	if len(esc) > 256 {
		s := sha256.Sum256([]byte(identity))
		esc = "sha256:" + hex.EncodeToString(s[:])
	}
	return esc + "/" + key
}

// secretHeaders are not copied into the message (dead letters, effects).
var secretHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization"}

func messageHeaders(h http.Header) []txinbox.Header {
	keys := make([]string, 0, len(h))
	for k := range h {
		if !slices.Contains(secretHeaders, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []txinbox.Header
	for _, k := range keys {
		for _, v := range h[k] {
			out = append(out, txinbox.Header{Key: k, Value: v})
		}
	}
	return out
}
