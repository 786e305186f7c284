package outbox

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/txinbox/txinbox"
)

// Header is one header of an outbox row: the inbox's header type, so a
// handler can copy a message's headers as they came. Keys may repeat; a
// value may hold any bytes.
type Header = txinbox.Header

// wireHeader is one header in the headers column. The column holds a JSON
// array of them, in order, so repeated keys survive. A value that JSON
// text cannot carry as it is (invalid UTF-8, or NUL, which PostgreSQL's
// jsonb refuses) is stored base64-encoded in value_base64 instead of value.
type wireHeader struct {
	Key         string  `json:"key"`
	Value       *string `json:"value,omitempty"`
	ValueBase64 *string `json:"value_base64,omitempty"`
}

// jsonSafe reports whether s survives a JSON text column and jsonb as is.
func jsonSafe(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// EncodeHeaders returns headers in the form of the headers column: a JSON
// array of {"key", "value"} objects, in order, with "value_base64" in
// place of "value" for a value that is not valid UTF-8 or holds a NUL.
// It returns "[]" for no headers. A key that is not JSON-safe is an error
// naming it, as neither column type can keep it.
func EncodeHeaders(h []Header) (string, error) {
	if len(h) == 0 {
		return "[]", nil
	}
	w := make([]wireHeader, len(h))
	for i, x := range h {
		if !jsonSafe(x.Key) {
			return "", fmt.Errorf("outbox: header %d: key %q is not valid UTF-8 or holds a NUL", i, x.Key)
		}
		v := x.Value
		w[i].Key = x.Key
		if jsonSafe(v) {
			w[i].Value = &v
		} else {
			b := base64.StdEncoding.EncodeToString([]byte(v))
			w[i].ValueBase64 = &b
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("outbox: headers: %w", err)
	}
	return string(b), nil
}

// DecodeHeaders reads the headers column: the array of EncodeHeaders, or
// the JSON object of string values earlier versions wrote (read in key
// order, since an object has none). An empty column, or JSON null, is no
// headers.
func DecodeHeaders(b []byte) ([]Header, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil, nil
	}
	if b[0] == '{' {
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("outbox: headers column: %w", err)
		}
		out := make([]Header, 0, len(m))
		for k, v := range m {
			out = append(out, Header{Key: k, Value: v})
		}
		slices.SortFunc(out, func(a, b Header) int { return strings.Compare(a.Key, b.Key) })
		return out, nil
	}
	var w []wireHeader
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("outbox: headers column: %w", err)
	}
	if len(w) == 0 {
		return nil, nil
	}
	out := make([]Header, len(w))
	for i, x := range w {
		out[i].Key = x.Key
		switch {
		case x.Value != nil && x.ValueBase64 != nil:
			return nil, fmt.Errorf("outbox: headers column: header %d (%q) has both value and value_base64", i, x.Key)
		case x.ValueBase64 != nil:
			v, err := base64.StdEncoding.DecodeString(*x.ValueBase64)
			if err != nil {
				return nil, fmt.Errorf("outbox: headers column: header %d (%q): value_base64: %w", i, x.Key, err)
			}
			out[i].Value = string(v)
		case x.Value != nil:
			out[i].Value = *x.Value
		}
	}
	return out, nil
}

// HeaderValue returns the value of the first header named key, or "".
func (m *Message) HeaderValue(key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return ""
}
