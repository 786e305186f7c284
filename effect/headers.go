package effect

import (
	"strings"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/outbox"
)

// contentType is a message's content-type header, whatever its case.
func contentType(m *txinbox.Message) string {
	for _, h := range m.Headers {
		if strings.EqualFold(h.Key, "content-type") || strings.EqualFold(h.Key, "content_type") {
			return h.Value
		}
	}
	return ""
}

// contentTypeSQL is contentType over new_messages.headers.
const contentTypeSQL = `coalesce((SELECT h->>'value' FROM jsonb_array_elements(headers) h
    WHERE lower(h->>'key') IN ('content-type', 'content_type') LIMIT 1), '')`

// contentTypeMySQL is contentTypeSQL on MySQL 8 and MariaDB 10.6 or
// later (JSON_TABLE over the outer row's headers).
const contentTypeMySQL = `coalesce((SELECT h.v FROM JSON_TABLE(headers, '$[*]' COLUMNS (k VARCHAR(255) PATH '$.key', v TEXT PATH '$.value')) h
    WHERE lower(h.k) IN ('content-type', 'content_type') LIMIT 1), '')`

// headersJSON is a message's headers in the outbox's headers form
// (outbox.EncodeHeaders): a JSON array of {key, value}, in order, a value
// that JSON cannot carry as it is base64-encoded in value_base64. A key
// no column can hold fails the message for good.
func headersJSON(m *txinbox.Message) (string, error) {
	s, err := outbox.EncodeHeaders(m.Headers)
	if err != nil {
		return "", txinbox.Permanent(err)
	}
	return s, nil
}

// outboxHeadersJSON is headersJSON for the outbox's headers column: ""
// for a message without headers, stored as NULL (which the relay reads as
// no headers) rather than "[]" encoded and parsed again per row.
func outboxHeadersJSON(m *txinbox.Message) (string, error) {
	if len(m.Headers) == 0 {
		return "", nil
	}
	return headersJSON(m)
}
