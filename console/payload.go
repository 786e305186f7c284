package console

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// The payload views are capped: a dead letter may hold megabytes.
const (
	textCap = 64 << 10
	hexCap  = 8 << 10
)

// payloadView is a stored payload as the detail page shows it. Every
// field is text: the templates escape it, so a payload holding markup or
// script is shown, never run.
type payloadView struct {
	Size          int
	Text          string
	TextTruncated bool
	ValidUTF8     bool
	Hex           string
	HexTruncated  bool
	EDI           []EDIKey
	EDIError      string // why the payload yields no EDI key
}

// viewPayload shows p, its EDI keys read with readEDI (none without it).
func viewPayload(p []byte, readEDI EDIReader) payloadView {
	v := payloadView{Size: len(p), ValidUTF8: utf8.Valid(p)}
	v.Text, v.TextTruncated = textOf(p, textCap), len(p) > textCap
	h := p
	if len(h) > hexCap {
		h, v.HexTruncated = h[:hexCap], true
	}
	v.Hex = hex.Dump(h)
	if readEDI == nil {
		v.EDIError = "not read (no EDI reader is configured)"
		return v
	}
	keys, err := readEDI(p)
	switch {
	case errors.Is(err, ErrNotEDI):
		v.EDIError = ErrNotEDI.Error()
	case err != nil:
		v.EDIError = err.Error()
	}
	v.EDI = keys
	return v
}

// textOf returns the first max bytes of b as text, invalid UTF-8 replaced.
func textOf(b []byte, max int) string {
	if len(b) > max {
		b = b[:max]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// header is one stored message header.
type header struct {
	Key, Value string
}

// parseHeaders reads the stored JSON array of {"key", "value"}; what it
// cannot read it shows as it is.
func parseHeaders(b []byte) []header {
	var hs []header
	if len(b) == 0 || json.Unmarshal(b, &hs) == nil {
		return hs
	}
	return []header{{Key: "(unreadable headers)", Value: string(b)}}
}
