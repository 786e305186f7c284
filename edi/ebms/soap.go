package ebms

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// maxEnvelopeHead bounds the bytes read from the start of the envelope to
// the end of the SOAP Header (and the start of a Fault): signed AS4 headers
// are tens of KiB; the bound keeps memory small on hostile input.
const maxEnvelopeHead = 8 << 20

var errTooLarge = errors.New("envelope head too large")

// walker reads the envelope token by token, keeping the element path for
// error messages.
type walker struct {
	d     *xml.Decoder
	base  int64  // offset of the XML in the input
	where string // "MIME part 1 " prefix when the envelope is in a part
	path  []string
	soap  string // SOAP namespace of the envelope
}

func newWalker(r io.Reader, base int64, where string) *walker {
	d := xml.NewDecoder(&limitReader{r: r, n: maxEnvelopeHead})
	d.CharsetReader = charsetReader
	return &walker{d: d, base: base, where: where}
}

// display renders an element name with the canonical prefix of its namespace.
func display(n xml.Name) string {
	switch n.Space {
	case NamespaceSOAP11:
		return "S11:" + n.Local
	case NamespaceSOAP12:
		return "S12:" + n.Local
	case NamespaceEbMS:
		return "eb:" + n.Local
	}
	return n.Local
}

func (w *walker) pathString(extra ...string) string {
	return w.where + "/" + strings.Join(append(append([]string(nil), w.path...), extra...), "/")
}

func (w *walker) errorf(off int64, sentinel error, msg string, extra ...string) *Error {
	return &Error{Path: w.pathString(extra...), Offset: off, Msg: msg, Err: sentinel}
}

// xmlError turns a decoder error into an *Error at the current position.
func (w *walker) xmlError(err error) error {
	off := w.base + w.d.InputOffset()
	var se *xml.SyntaxError
	switch {
	case errors.Is(err, errTooLarge):
		return w.errorf(off, ErrMalformed, "envelope header larger than 8 MiB")
	case errors.As(err, &se) && se.Msg != "unexpected EOF":
		return w.errorf(off, ErrMalformed, "malformed XML: "+se.Msg)
	case se != nil || err == io.EOF || err == io.ErrUnexpectedEOF:
		return w.errorf(off, ErrMalformed, "input ends inside the XML: the envelope is truncated")
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return w.errorf(off, ErrMalformed, "reading the envelope: "+err.Error())
}

// child returns the next child element of the current element and its
// offset, or nil at the current element's end tag.
func (w *walker) child() (*xml.StartElement, int64, error) {
	for {
		off := w.base + w.d.InputOffset()
		t, err := w.d.Token()
		if err != nil {
			return nil, off, w.xmlError(err)
		}
		switch t := t.(type) {
		case xml.StartElement:
			return &t, off, nil
		case xml.EndElement:
			return nil, off, nil
		}
	}
}

// root returns the document element.
func (w *walker) root() (*xml.StartElement, int64, error) {
	for {
		off := w.base + w.d.InputOffset()
		t, err := w.d.Token()
		if err == io.EOF {
			return nil, off, w.errorf(off, ErrNotSOAP, "no XML element in the input")
		}
		if err != nil {
			return nil, off, w.xmlError(err)
		}
		switch t := t.(type) {
		case xml.StartElement:
			return &t, off, nil
		case xml.Directive:
			return nil, off, w.errorf(off, ErrMalformed, "a document type declaration (<!DOCTYPE …>) is not allowed in a SOAP message")
		}
	}
}

func (w *walker) push(n xml.Name) { w.path = append(w.path, display(n)) }
func (w *walker) pop()            { w.path = w.path[:len(w.path)-1] }

func (w *walker) skip() error {
	if err := w.d.Skip(); err != nil {
		return w.xmlError(err)
	}
	return nil
}

func (w *walker) decode(v any, start *xml.StartElement) error {
	if err := w.d.DecodeElement(v, start); err != nil {
		return w.xmlError(err)
	}
	return nil
}

// decodeIn decodes an element with its name on the path, so that a
// malformed descendant is reported inside it.
func (w *walker) decodeIn(v any, start *xml.StartElement) error {
	w.push(start.Name)
	defer w.pop()
	return w.decode(v, start)
}

// limitReader fails with errTooLarge once more than n bytes were read.
type limitReader struct {
	r io.Reader
	n int64
}

// Read implements io.Reader.
func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
