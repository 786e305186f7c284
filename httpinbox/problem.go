package httpinbox

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Problem is an RFC 9457 problem body, as the middleware answers its own
// refusals (Content-Type application/problem+json).
type Problem struct {
	// Type is a link to the section of the documentation (docs/http.md)
	// that explains the problem and what a client does about it.
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Key is the idempotency key concerned, when it was readable.
	Key string `json:"idempotency_key,omitempty"`
}

// problem kinds: the fragment of Config.DocsURL each links to.
const (
	probMissingKey   = "missing-key"
	probInvalidKey   = "invalid-key"
	probMismatch     = "key-reused"
	probInFlight     = "in-flight"
	probDeadLettered = "dead-lettered"
	probFailed       = "failed"
	probUnavailable  = "unavailable"
	probBodyTooLarge = "body-too-large"
	probBadBody      = "bad-body"
	probIdentity     = "identity"
)

var problemTitles = map[string]string{
	probMissingKey:   "Idempotency-Key is missing",
	probInvalidKey:   "Idempotency key is invalid",
	probMismatch:     "Idempotency key reused with another request",
	probInFlight:     "A request with this idempotency key is in progress",
	probDeadLettered: "This idempotency key was given up after repeated failures",
	probFailed:       "The request failed; nothing was stored",
	probUnavailable:  "The request's outcome is not known; retry with the same key",
	probBodyTooLarge: "Request body too large",
	probBadBody:      "Request body could not be read",
	probIdentity:     "Caller not identified",
}

// writeProblem answers with a problem body; a positive retryAfter (in
// seconds) sets Retry-After.
func (in *Inbox[TTx]) writeProblem(w http.ResponseWriter, status int, kind, detail, key string, retryAfter int) {
	p := Problem{Type: in.cfg.DocsURL + "#" + kind, Title: problemTitles[kind], Status: status, Detail: detail, Key: key}
	b, _ := json.Marshal(p)
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(status)
	w.Write(b) //nolint:errcheck // the client went away
}
