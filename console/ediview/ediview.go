// Package ediview reads the EDI envelopes of stored payloads for the web
// console with package edi: Read is a console.EDIReader. It lives apart
// from package console so that a program without EDI does not link the
// EDI parsers.
package ediview

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/edi"
	"github.com/txinbox/txinbox/edi/edifact"
)

var _ console.EDIReader = Read

// Read returns the EDIFACT and X12 interchanges and the AS4 user messages
// of payload with their inbox keys (edi.Keys), the fields as text; an
// error wrapping console.ErrNotEDI when payload is none of them.
func Read(payload []byte) ([]console.EDIKey, error) {
	keys, err := edi.Keys(bytes.NewReader(payload))
	if errors.Is(err, edi.ErrUnknownFormat) {
		err = fmt.Errorf("%w: %w", console.ErrNotEDI, err)
	}
	out := make([]console.EDIKey, 0, len(keys))
	for _, k := range keys {
		ek := console.EDIKey{Kind: string(k.Kind), ID: k.ID, Offset: k.Offset}
		for _, f := range k.Text() {
			ek.Fields = append(ek.Fields, console.EDIField{Name: f.Name, Value: f.Value})
		}
		if k.Kind == edi.KindEDIFACT {
			ek.Charset = edifact.Charset(k.Syntax)
		}
		out = append(out, ek)
	}
	return out, err
}
