package txinbox

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxKeyBytes is the most bytes that a message's Scope and ID may hold
// together: PostgreSQL's primary-key index refuses entries of about 2.7 kB
// and more. A longer key is refused (see ErrInvalidMessage).
const MaxKeyBytes = 2048

// ErrInvalidMessage is the reason a message whose key or text fields the
// database cannot store is dead-lettered at once: a NUL byte or invalid
// UTF-8 in ID, Scope, Source, SourcePosition or PartitionKey, or an ID and
// Scope longer than MaxKeyBytes. Both stores refuse the same messages. The
// dead letter holds each refused field in a form the database can store
// (see InvalidMessageError) and its raw bytes, base64-encoded, in a header
// named "txinbox-raw-" plus the field's name.
var ErrInvalidMessage = errors.New("txinbox: message cannot be stored")

// InvalidMessageError says which field of a message the database cannot
// store, and why. It matches ErrInvalidMessage with errors.Is.
type InvalidMessageError struct {
	Field   string // "ID", "Scope", "Source", "SourcePosition" or "PartitionKey"
	Problem string
}

// Error names the message field at fault and why.
func (e *InvalidMessageError) Error() string {
	return "txinbox: message cannot be stored: " + e.Field + " " + e.Problem
}

// Is reports whether target is ErrInvalidMessage.
func (e *InvalidMessageError) Is(target error) bool { return target == ErrInvalidMessage }

// textProblem says why the database cannot store s as text, or "".
func textProblem(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Sprintf("contains a NUL byte at byte %d", i)
	}
	if !utf8.ValidString(s) {
		for i, r := range s {
			if r == utf8.RuneError {
				if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
					return fmt.Sprintf("is not valid UTF-8 at byte %d", i)
				}
			}
		}
		return "is not valid UTF-8"
	}
	return ""
}

// validate returns the first field of m that the database cannot store.
func validate(m *Message) *InvalidMessageError {
	for _, f := range []struct{ name, v string }{
		{"ID", m.ID}, {"Scope", m.Scope}, {"Source", m.Source},
		{"SourcePosition", m.SourcePosition}, {"PartitionKey", m.PartitionKey},
	} {
		if p := textProblem(f.v); p != "" {
			return &InvalidMessageError{Field: f.name, Problem: p}
		}
	}
	if n := len(m.Fingerprint); n != 0 && n != sha256.Size {
		return &InvalidMessageError{Field: "Fingerprint", Problem: fmt.Sprintf("holds %d bytes, not 32", n)}
	}
	if n := len(m.Scope) + len(m.ID); n > MaxKeyBytes {
		return &InvalidMessageError{Field: "ID", Problem: fmt.Sprintf("and Scope hold %d bytes, more than MaxKeyBytes (%d)", n, MaxKeyBytes)}
	}
	return nil
}

// standIn returns a stand-in for s that the database can store, the same
// for the same s: "invalid:", the SHA-256 of s in hex, ":" and the first
// bytes of s Go-quoted (NULs and invalid bytes escaped). The raw bytes
// travel in the dead letter's headers.
func standIn(s string) string {
	h := sha256.Sum256([]byte(s))
	return fmt.Sprintf("invalid:%x:%s", h, strconv.QuoteToASCII(s[:min(len(s), 64)]))
}

// safeText makes an error text storable: NULs and invalid UTF-8 become
// U+FFFD.
func safeText(s string) string {
	if textProblem(s) == "" {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// dlHeader is one header of a dead letter as stored: a key or value that
// the database cannot store as text (a NUL, invalid UTF-8) is kept as
// base64 beside a readable stand-in.
type dlHeader struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	KeyBase64   string `json:"key_base64,omitempty"`
	ValueBase64 string `json:"value_base64,omitempty"`
}

// headersJSON encodes headers for a dead letter, plus the raw bytes of
// the fields in raw (name, value) that the database could not store.
func headersJSON(headers []Header, raw [][2]string) []byte {
	hs := make([]dlHeader, 0, len(headers)+len(raw))
	for _, h := range headers {
		d := dlHeader{Key: h.Key, Value: h.Value}
		if textProblem(h.Key) != "" {
			d.Key, d.KeyBase64 = safeText(h.Key), base64.StdEncoding.EncodeToString([]byte(h.Key))
		}
		if textProblem(h.Value) != "" {
			d.Value, d.ValueBase64 = safeText(h.Value), base64.StdEncoding.EncodeToString([]byte(h.Value))
		}
		hs = append(hs, d)
	}
	for _, r := range raw {
		hs = append(hs, dlHeader{Key: "txinbox-raw-" + r[0], Value: base64.StdEncoding.EncodeToString([]byte(r[1]))})
	}
	b, _ := json.Marshal(hs) // valid strings only: always marshals
	return b
}
