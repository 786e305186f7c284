// Package wire holds what both sides of AS4 read and write the same way:
// the SOAP content types, the ebMS timestamp form, XML white space, the
// child elements of an XML element, and the parts of a multipart/related
// body. Package as4 (the receiving endpoint) and package as4/as4client
// (the sending side) use it, so that what one side writes the other reads
// with the same code.
package wire

import (
	"encoding/xml"
	"strings"
	"time"
)

// The Content-Types of a SOAP envelope written by txinbox.
const (
	ContentTypeSOAP12 = "application/soap+xml; charset=UTF-8"
	ContentTypeSOAP11 = "text/xml; charset=UTF-8"
)

// Timestamp formats t as an eb:Timestamp: UTC with milliseconds.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Trim removes leading and trailing XML white space.
func Trim(s string) string { return strings.Trim(s, " \t\r\n") }

// NextChild returns the next child element of the current element, or nil
// at its end tag.
func NextChild(d *xml.Decoder) (*xml.StartElement, error) {
	for {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := t.(type) {
		case xml.StartElement:
			return &t, nil
		case xml.EndElement:
			return nil, nil
		}
	}
}
