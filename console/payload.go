package console

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/txinbox/txinbox/edi"
	"github.com/txinbox/txinbox/edi/edifact"
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
	EDI           []ediKey
	EDIError      string // why the payload yields no EDI key
}

// ediKey is one interchange or AS4 user message found in a payload.
type ediKey struct {
	Kind    edi.Kind
	ID      string
	Fields  []edi.Field
	Offset  int64
	Charset string
}

func viewPayload(p []byte) payloadView {
	v := payloadView{Size: len(p), ValidUTF8: utf8.Valid(p)}
	v.Text, v.TextTruncated = textOf(p, textCap), len(p) > textCap
	h := p
	if len(h) > hexCap {
		h, v.HexTruncated = h[:hexCap], true
	}
	v.Hex = hex.Dump(h)
	keys, err := edi.Keys(bytes.NewReader(p))
	switch {
	case errors.Is(err, edi.ErrUnknownFormat):
		v.EDIError = "not EDIFACT, X12 or AS4"
	case err != nil:
		v.EDIError = err.Error()
	}
	for _, k := range keys {
		ek := ediKey{Kind: k.Kind, ID: k.ID, Fields: k.Text(), Offset: k.Offset}
		if k.Kind == edi.KindEDIFACT {
			ek.Charset = edifact.Charset(k.Syntax)
		}
		v.EDI = append(v.EDI, ek)
	}
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
