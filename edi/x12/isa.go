package x12

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/txinbox/txinbox/edi/internal/scan"
)

// isaLength is the length of the ISA segment without its terminator.
const isaLength = 105

// isaSeparators are the 0-based positions of the element separators in the
// ISA: after the tag and after ISA01 to ISA15.
var isaSeparators = [16]int{3, 6, 17, 20, 31, 34, 50, 53, 69, 76, 81, 83, 89, 99, 101, 103}

// Separators are the delimiters of an interchange, taken from its ISA.
type Separators struct {
	Element    byte   // ISA character 4
	Component  byte   // ISA16
	Repetition byte   // ISA11 from version 00402; 0 before
	Segment    string // the character after ISA16, one byte or one UTF-8 sequence
}

// Party is the sender or the receiver of an interchange.
type Party struct {
	Qualifier string // ISA05 or ISA07
	ID        string // ISA06 or ISA08, trailing spaces removed
}

// Interchange is the envelope of one ISA…IEA interchange.
type Interchange struct {
	// Offset is the byte offset of the ISA; End the offset just after the
	// IEA terminator.
	Offset, End int64

	Sender        Party  // ISA05, ISA06
	Receiver      Party  // ISA07, ISA08
	Date, Time    string // ISA09 (YYMMDD), ISA10 (HHMM)
	Version       string // ISA12 interchange control version number
	ControlNumber string // ISA13
	AckRequested  string // ISA14
	Usage         string // ISA15: P production, T test, I information

	Separators Separators

	// Groups, Sets and Acks count the GS, ST and TA1 segments.
	Groups, Sets, Acks int
}

// Key returns the values that identify the interchange, in this order:
// ISA05, ISA06, ISA07, ISA08, ISA13 and ISA15. The usage indicator is kept
// because partners reuse control numbers between test and production.
func (ic *Interchange) Key() []string {
	return []string{ic.Sender.Qualifier, ic.Sender.ID, ic.Receiver.Qualifier, ic.Receiver.ID, ic.ControlNumber, ic.Usage}
}

// readISA reads the fixed-width ISA, ignoring line breaks before its last
// character, and the segment terminator that follows.
func (r *Reader) readISA() (*Interchange, error) {
	ic := &Interchange{Offset: r.in.Offset()}
	isa := make([]byte, 0, isaLength)
	for len(isa) < isaLength {
		b, err := r.in.ReadByte()
		if err == io.EOF {
			return nil, errorf("ISA", "", ic.Offset, "too short: input ends after %d of the %d characters of the fixed-width ISA", len(isa), isaLength+1)
		}
		if err != nil {
			return nil, fmt.Errorf("x12: reading ISA at byte %d: %w", ic.Offset, err)
		}
		if b != '\r' && b != '\n' {
			isa = append(isa, b)
		}
	}
	term, err := r.readTerminator(ic.Offset)
	if err != nil {
		return nil, err
	}
	if err := decodeISA(ic, isa, term); err != nil {
		return nil, err
	}
	return ic, nil
}

// readTerminator reads the ISA's segment terminator: one byte, or a whole
// UTF-8 sequence when the byte is a UTF-8 lead byte.
func (r *Reader) readTerminator(off int64) (string, error) {
	b, err := r.in.ReadByte()
	if err != nil {
		return "", errorf("ISA", "", off, "too short: input ends before the segment terminator (character %d of the ISA)", isaLength+1)
	}
	if b < 0xc2 || b > 0xf4 {
		return string([]byte{b}), nil
	}
	seq := []byte{b}
	for !utf8.FullRune(seq) {
		c, err := r.in.ReadByte()
		if err != nil {
			break
		}
		seq = append(seq, c)
	}
	if ru, _ := utf8.DecodeRune(seq); ru == utf8.RuneError {
		return "", errorf("ISA", "", off, "segment terminator %q is neither one byte nor a UTF-8 character", seq)
	}
	return string(seq), nil
}

// decodeISA checks the fixed layout and fills ic from the ISA characters.
func decodeISA(ic *Interchange, isa []byte, term string) error {
	if string(isa[:3]) != "ISA" {
		return errorf("ISA", "", ic.Offset, "expected ISA, found %q", isa[:3])
	}
	sep := isa[3]
	if scan.IsAlnum(sep) || sep == ' ' {
		return errorf("ISA", "", ic.Offset, "data element separator %s (character 4) must not be a letter, digit or space", scan.Printable(sep))
	}
	for k, p := range isaSeparators[1:] {
		if isa[p] != sep {
			return errorf("ISA", fmt.Sprintf("ISA%02d", k+1), ic.Offset,
				"wrong width: expected the data element separator %s at character %d, found %s (the ISA is fixed-width, 106 characters)",
				scan.Printable(sep), p+1, scan.Printable(isa[p]))
		}
	}
	field := func(from, to int) string { return string(isa[from:to]) }
	ic.Separators = Separators{Element: sep, Component: isa[104], Segment: term}
	ic.Sender = Party{Qualifier: strings.TrimSpace(field(32, 34)), ID: strings.TrimRight(field(35, 50), " ")}
	ic.Receiver = Party{Qualifier: strings.TrimSpace(field(51, 53)), ID: strings.TrimRight(field(54, 69), " ")}
	ic.Date, ic.Time = field(70, 76), field(77, 81)
	ic.Version = field(84, 89)
	ic.ControlNumber = strings.TrimSpace(field(90, 99))
	ic.AckRequested, ic.Usage = field(100, 101), strings.TrimSpace(field(102, 103))
	if ic.Version >= "00402" && isa[82] != ' ' {
		ic.Separators.Repetition = isa[82]
	}
	return checkISA(ic)
}

func checkISA(ic *Interchange) error {
	s := ic.Separators
	switch {
	case s.Component == s.Element || scan.IsAlnum(s.Component):
		return errorf("ISA", "ISA16", ic.Offset, "component separator %s must differ from the element separator and not be a letter or digit", scan.Printable(s.Component))
	case s.Segment == string(s.Element) || s.Segment == string(s.Component) || len(s.Segment) == 1 && (scan.IsAlnum(s.Segment[0]) || s.Segment == " "):
		return errorf("ISA", "", ic.Offset, "segment terminator %q (character 106) must differ from the separators and not be a letter, digit or space", s.Segment)
	case ic.Sender.ID == "":
		return errorf("ISA", "ISA06", ic.Offset, "interchange sender id is blank")
	case ic.Receiver.ID == "":
		return errorf("ISA", "ISA08", ic.Offset, "interchange receiver id is blank")
	case ic.ControlNumber == "":
		return errorf("ISA", "ISA13", ic.Offset, "interchange control number is blank")
	}
	return nil
}
