package ebms

import (
	"encoding/xml"
	"io"
	"strconv"
)

// parseEnvelope reads a SOAP envelope from r, whose first byte is at offset
// base of the input, up to the end of its Header.
func parseEnvelope(r io.Reader, base int64, where string) (*Message, error) {
	w := newWalker(r, base, where)
	root, off, err := w.root()
	if err != nil {
		return nil, err
	}
	switch {
	case root.Name.Local == "Envelope" && (root.Name.Space == NamespaceSOAP11 || root.Name.Space == NamespaceSOAP12):
		w.soap = root.Name.Space
	case root.Name.Space == NamespaceEbMS && root.Name.Local == "Messaging":
		return nil, w.errorf(off, ErrNotSOAP, "eb:Messaging is the root element: it must be a header block of a SOAP Envelope", display(root.Name))
	default:
		return nil, w.errorf(off, ErrNotSOAP, "root element is {"+root.Name.Space+"}"+root.Name.Local+", not a SOAP 1.1 or 1.2 Envelope", display(root.Name))
	}
	w.push(root.Name)
	first, off, err := w.child()
	if err != nil {
		return nil, err
	}
	if first == nil {
		return nil, w.errorf(off, ErrNoMessaging, "the envelope is empty (no SOAP Header)")
	}
	if first.Name.Space == w.soap && first.Name.Local == "Header" {
		return w.header(first)
	}
	if first.Name.Space == w.soap && first.Name.Local == "Body" {
		if err := w.fault(first); err != nil {
			return nil, err
		}
		return nil, w.errorf(off, ErrNoMessaging, "no SOAP Header, so no eb:Messaging", display(first.Name))
	}
	return nil, w.errorf(off, ErrNotSOAP, "expected the SOAP Header or Body, found "+display(first.Name), display(first.Name))
}

// header reads the SOAP Header's blocks and returns the user message of its
// eb:Messaging block.
func (w *walker) header(h *xml.StartElement) (*Message, error) {
	w.push(h.Name)
	var (
		msg   *Message
		found error // error from the eb:Messaging block
		seen  bool
		atOff int64
	)
	for {
		el, off, err := w.child()
		if err != nil {
			return nil, err
		}
		if el == nil {
			break
		}
		if el.Name.Space != NamespaceEbMS || el.Name.Local != "Messaging" {
			if err := w.skip(); err != nil {
				return nil, err
			}
			continue
		}
		if seen {
			return nil, w.errorf(off, ErrInvalidHeader, "second eb:Messaging header block (the first is at byte "+itoa(atOff)+")", "eb:Messaging")
		}
		seen, atOff = true, off
		msg, found = w.messaging(el, off)
		if found != nil && !isVerdict(found) {
			return nil, found // malformed XML: the header cannot be trusted
		}
	}
	hdrEnd := w.base + w.d.InputOffset()
	w.pop()
	if !seen {
		return nil, w.afterHeader(hdrEnd)
	}
	return msg, found
}

// afterHeader looks at the Body of an envelope without eb:Messaging, to
// report a SOAP Fault as such.
func (w *walker) afterHeader(hdrEnd int64) error {
	el, _, err := w.child()
	if err != nil {
		return err
	}
	if el != nil && el.Name.Space == w.soap && el.Name.Local == "Body" {
		if err := w.fault(el); err != nil {
			return err
		}
	}
	return w.errorf(hdrEnd, ErrNoMessaging, "the SOAP Header has no eb:Messaging block", display(xml.Name{Space: w.soap, Local: "Header"}))
}

// fault returns a *FaultError if the first child of the Body b is a SOAP
// Fault, a read error, or nil.
func (w *walker) fault(b *xml.StartElement) error {
	w.push(b.Name)
	defer w.pop()
	el, off, err := w.child()
	if err != nil || el == nil || el.Name.Space != w.soap || el.Name.Local != "Fault" {
		return err
	}
	var f faultXML
	if err := w.decode(&f, el); err != nil {
		return err
	}
	return f.toError(w.pathString(display(el.Name)), off)
}

// isVerdict reports whether err is a finding about a well-formed
// eb:Messaging (signal, missing element) rather than a read failure.
func isVerdict(err error) bool {
	switch e := err.(type) {
	case *SignalError:
		return true
	case *Error:
		return e.Err == ErrInvalidHeader
	}
	return false
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
