package edifact

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/txinbox/txinbox/edi/internal/scan"
)

// Element is one data element of a segment written by a Writer: a simple
// data element has one value, a composite one has a value per component.
// Values are written escaped: every service character in them is preceded
// by the release character.
type Element []string

// Header is the UNB of an interchange written by a Writer.
type Header struct {
	// Syntax is S001/0001, the syntax identifier, e.g. "UNOC". Required.
	Syntax string
	// Version is S001/0002, the syntax version number, "1" to "4".
	// Required. In version 4 the repetition separator is a service
	// character too (it is escaped in values).
	Version string
	// Sender and Recipient are S002 and S003; their IDs are required.
	Sender, Recipient Party
	// Date and Time are S004/0017 and S004/0019, as they are written:
	// YYMMDD (CCYYMMDD in version 4) and HHMM. Required.
	Date, Time string
	// ControlRef is 0020, the interchange control reference (at most 14
	// characters), repeated in the UNZ. Required.
	ControlRef string
	// AckRequest is 0031 ("1" asks for an acknowledgement). Optional.
	AckRequest string
	// TestIndicator is 0035 ("1" for a test interchange). Optional.
	TestIndicator string
}

// WriteError reports what a Writer could not write: a value that cannot be
// represented, a missing required value, or a call out of order.
type WriteError struct {
	// Segment is the tag of the segment being written, e.g. "UNB".
	Segment string
	// Element names the value at fault: ISO 9735 names for service
	// segments ("S002/0004"), else the 1-based position of the element and
	// component ("3:2"); empty when the whole segment is at fault.
	Element string
	// Msg says what is wrong.
	Msg string
}

// Error returns a message such as
// `edifact: writing UNB element S002/0004: value "A\n" contains a line break`.
func (e *WriteError) Error() string {
	where := e.Segment
	if e.Element != "" {
		where += " element " + e.Element
	}
	return "edifact: writing " + where + ": " + e.Msg
}

// Writer writes UN/EDIFACT interchanges: UNA, UNB, messages from UNH to
// UNT with the segment count, and the UNZ with the message count and the
// control reference. It checks what it writes, not what a message means:
// segment contents are the caller's. Errors are sticky: after the first,
// every call returns it and nothing more is written.
//
// Values may hold any byte except CR and LF (which readers drop when they
// are not service characters); service characters in values are escaped
// with the release character, and a separator set without one refuses such
// values. Trailing empty elements and components are left out, as ISO 9735
// asks.
type Writer struct {
	out      io.Writer
	sep      Separators // as given to NewWriter
	cur      Separators // in force in the open interchange
	version  string
	ref      string // the interchange control reference, for the UNZ
	msgRef   string // the open message's reference, "" outside a message
	messages int    // messages in the interchange
	segments int    // segments of the open message, UNH included
	open     bool   // between UNB and UNZ
	buf      []byte
	err      error
}

// NewWriter returns a Writer on w using the service characters sep (the
// zero value means DefaultSeparators). Each interchange starts with a UNA
// declaring them; sep.Repetition is used in syntax version 4 only
// (default '*'), UNA5 is a space before. Each segment is written to w with one Write call.
func NewWriter(w io.Writer, sep Separators) *Writer {
	if sep == (Separators{}) {
		sep = DefaultSeparators
	}
	if sep.Decimal == 0 {
		sep.Decimal = '.'
	}
	return &Writer{out: w, sep: sep}
}

// Err returns the first error the Writer met, or nil.
func (w *Writer) Err() error { return w.err }

func (w *Writer) fail(seg, elem, format string, args ...any) error {
	if w.err == nil {
		w.err = &WriteError{Segment: seg, Element: elem, Msg: fmt.Sprintf(format, args...)}
	}
	return w.err
}

// BeginInterchange writes the UNA and the UNB of a new interchange.
func (w *Writer) BeginInterchange(h Header) error {
	if w.err != nil {
		return w.err
	}
	if w.open {
		return w.fail("UNB", "", "interchange %q is still open (call EndInterchange first)", w.ref)
	}
	if err := w.checkHeader(h); err != nil {
		return err
	}
	w.version, w.ref, w.messages, w.open = h.Version, h.ControlRef, 0, true
	if _, err := io.WriteString(w.out, w.cur.UNA()); err != nil {
		w.err = err
		return err
	}
	names := []string{"S001/0001", "S002/0004", "S003/0010", "S004/0017", "0020"}
	return w.write("UNB", names, []Element{
		{h.Syntax, h.Version},
		{h.Sender.ID, h.Sender.Qualifier, h.Sender.Internal, h.Sender.Sub},
		{h.Recipient.ID, h.Recipient.Qualifier, h.Recipient.Internal, h.Recipient.Sub},
		{h.Date, h.Time},
		{h.ControlRef}, nil, nil, nil,
		{h.AckRequest}, nil,
		{h.TestIndicator},
	})
}

func (w *Writer) checkHeader(h Header) error {
	switch {
	case len(h.Syntax) != 4 || !isAlnumString(h.Syntax):
		return w.fail("UNB", "S001/0001", "syntax identifier %q is not four letters, e.g. UNOC", h.Syntax)
	case h.Version < "1" || h.Version > "4" || len(h.Version) != 1:
		return w.fail("UNB", "S001/0002", "syntax version %q is not 1 to 4", h.Version)
	case blank(h.Sender.ID):
		return w.fail("UNB", "S002/0004", "the sender identification is required (not only spaces)")
	case blank(h.Recipient.ID):
		return w.fail("UNB", "S003/0010", "the recipient identification is required (not only spaces)")
	case h.Date == "" || h.Time == "":
		return w.fail("UNB", "S004", "the date and time of preparation are required")
	case blank(h.ControlRef) || len(h.ControlRef) > 14:
		return w.fail("UNB", "0020", "the control reference %q must have 1 to 14 characters", h.ControlRef)
	}
	// UNA5 is reserved (space) before version 4, and the repetition
	// separator, default '*', from version 4 on.
	s := w.sep
	if h.Version != "4" {
		s.Repetition = 0
	} else if s.Repetition == 0 {
		s.Repetition = '*'
	}
	if err := s.check(); err != nil {
		return w.fail("UNA", "", "%v", err)
	}
	if s.Decimal != '.' && s.Decimal != ',' {
		return w.fail("UNA", "", "UNA3 decimal mark is %s: use '.' or ','", scan.Printable(s.Decimal))
	}
	for _, c := range []byte{s.Component, s.Element, s.Segment} {
		if c == 0 || c == ' ' {
			return w.fail("UNA", "", "the component, element and segment separators must be set and not space")
		}
	}
	w.cur = s
	return nil
}

// BeginMessage writes the UNH of a message: its reference (0062, at most
// 14 characters, repeated in the UNT) and its identifier S009, e.g.
// Element{"INVOIC", "D", "96A", "UN"}.
func (w *Writer) BeginMessage(ref string, identifier Element) error {
	if w.err != nil {
		return w.err
	}
	switch {
	case !w.open:
		return w.fail("UNH", "", "no interchange is open (call BeginInterchange first)")
	case w.msgRef != "":
		return w.fail("UNH", "", "message %q is still open (call EndMessage first)", w.msgRef)
	case ref == "" || len(ref) > 14:
		return w.fail("UNH", "0062", "the message reference %q must have 1 to 14 characters", ref)
	case len(identifier) < 4 || identifier[0] == "":
		return w.fail("UNH", "S009", "the message identifier needs type, version, release and agency, e.g. INVOIC:D:96A:UN")
	}
	w.msgRef, w.segments = ref, 0
	return w.write("UNH", []string{"0062", "S009"}, []Element{{ref}, identifier})
}

// Segment writes one segment of the open message. tag is three upper-case
// letters or digits; the service segments the Writer writes itself (UNA,
// UNB, UNG, UNE, UNH, UNT, UNZ) are refused.
func (w *Writer) Segment(tag string, elements ...Element) error {
	if w.err != nil {
		return w.err
	}
	if len(tag) != 3 || !isUpperAlnum(tag) {
		return w.fail(tag, "", "segment tag %q is not three upper-case letters or digits", tag)
	}
	switch tag {
	case "UNA", "UNB", "UNG", "UNE", "UNH", "UNT", "UNZ":
		return w.fail(tag, "", "%s is written by the Writer itself", tag)
	}
	if w.msgRef == "" {
		return w.fail(tag, "", "no message is open (call BeginMessage first)")
	}
	return w.write(tag, nil, elements)
}

// EndMessage writes the UNT: the number of segments of the message, UNH
// and UNT included, and the message reference.
func (w *Writer) EndMessage() error {
	if w.err != nil {
		return w.err
	}
	if w.msgRef == "" {
		return w.fail("UNT", "", "no message is open")
	}
	ref := w.msgRef
	if err := w.write("UNT", nil, []Element{{strconv.Itoa(w.segments + 1)}, {ref}}); err != nil {
		return err
	}
	w.msgRef = ""
	w.messages++
	return nil
}

// EndInterchange writes the UNZ: the number of messages and the control
// reference of the UNB.
func (w *Writer) EndInterchange() error {
	if w.err != nil {
		return w.err
	}
	switch {
	case !w.open:
		return w.fail("UNZ", "", "no interchange is open")
	case w.msgRef != "":
		return w.fail("UNZ", "", "message %q is still open (call EndMessage first)", w.msgRef)
	}
	if err := w.write("UNZ", nil, []Element{{strconv.Itoa(w.messages)}, {w.ref}}); err != nil {
		return err
	}
	w.open = false
	return nil
}

// Messages returns the number of messages ended in the open (or last)
// interchange.
func (w *Writer) Messages() int { return w.messages }

// write encodes one segment and writes it; names give the ISO 9735 names
// of the first elements, for errors.
func (w *Writer) write(tag string, names []string, elements []Element) error {
	// Trailing empty elements and components are omitted.
	for len(elements) > 0 && isEmpty(elements[len(elements)-1]) {
		elements = elements[:len(elements)-1]
	}
	b := append(w.buf[:0], tag...)
	for i, el := range elements {
		b = append(b, w.cur.Element)
		for len(el) > 0 && el[len(el)-1] == "" {
			el = el[:len(el)-1]
		}
		for j, v := range el {
			if j > 0 {
				b = append(b, w.cur.Component)
			}
			var err error
			if b, err = w.escape(b, v); err != nil {
				name := strconv.Itoa(i+1) + ":" + strconv.Itoa(j+1)
				if i < len(names) && j == 0 {
					name = names[i]
				}
				return w.fail(tag, name, "value %q %v", v, err)
			}
		}
	}
	b = append(b, w.cur.Segment)
	w.buf = b
	if _, err := w.out.Write(b); err != nil {
		w.err = err
		return err
	}
	if w.msgRef != "" || tag == "UNH" {
		w.segments++
	}
	return nil
}

// escape appends v with the release character before every service
// character.
func (w *Writer) escape(b []byte, v string) ([]byte, error) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == w.cur.Component || c == w.cur.Element || c == w.cur.Segment ||
			(w.cur.Release != 0 && c == w.cur.Release) || (w.version == "4" && c == w.cur.Repetition) {
			if w.cur.Release == 0 {
				return nil, fmt.Errorf("contains the service character %s and the separators have no release character", scan.Printable(c))
			}
			b = append(b, w.cur.Release)
		} else if c == '\r' || c == '\n' {
			return nil, fmt.Errorf("contains a line break, which EDIFACT readers drop")
		}
		b = append(b, c)
	}
	return b, nil
}

// blank reports a value that readers see as empty: trailing spaces are
// not significant in the envelope's key values.
func blank(v string) bool { return strings.TrimRight(v, " ") == "" }

func isEmpty(el Element) bool {
	for _, v := range el {
		if v != "" {
			return false
		}
	}
	return true
}

func isUpperAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func isAlnumString(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r > 0x7f || !scan.IsAlnum(byte(r)) }) < 0
}
