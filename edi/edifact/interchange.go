package edifact

import "strings"

// Party identifies the sender or the recipient of an interchange (UNB S002
// or S003).
type Party struct {
	ID        string // 0004 or 0010
	Qualifier string // 0007, identification code qualifier
	Internal  string // 0008 or 0014: routing address (v1-3), internal identification (v4)
	Sub       string // 0042 or 0046: internal sub-identification (v4)
}

// Interchange is the envelope of one UNB…UNZ interchange. Values are
// un-escaped; trailing spaces are removed from the key values (party ids,
// qualifiers, control reference and test indicator), leading zeros are kept.
type Interchange struct {
	// Offset is the byte offset of the interchange's UNA, or of its UNB when
	// it has no UNA.
	Offset int64
	// End is the byte offset just after the UNZ segment terminator.
	End int64

	Syntax        string // S001/0001 syntax identifier, e.g. "UNOA"
	Version       string // S001/0002 syntax version number, "1" to "4"
	Sender        Party  // S002
	Recipient     Party  // S003
	Date          string // S004/0017 as written (YYMMDD or CCYYMMDD)
	Time          string // S004/0019
	ControlRef    string // 0020 interchange control reference
	AckRequest    string // 0031 acknowledgement request
	TestIndicator string // 0035 test indicator; "" for production

	// Separators are the service characters in force, from UNA or defaults.
	Separators Separators
	// HasUNA reports whether the interchange started with a UNA.
	HasUNA bool

	// Groups and Messages count the UNG and UNH segments.
	Groups   int
	Messages int
}

// Key returns the values that identify the interchange, in this order:
// sender id, sender qualifier, recipient id, recipient qualifier, control
// reference and test indicator. ISO 9735 (v4 UNB note 2) makes S002, S003
// and 0020 identify an interchange; the test indicator is added because
// partners reuse control references between test and production.
func (ic *Interchange) Key() []string {
	return []string{ic.Sender.ID, ic.Sender.Qualifier, ic.Recipient.ID, ic.Recipient.Qualifier, ic.ControlRef, ic.TestIndicator}
}

func trimKey(s string) string { return strings.TrimRight(s, " ") }

// decodeUNB fills ic from the data elements of a UNB segment.
func decodeUNB(ic *Interchange, els [][]string, off int64) error {
	ic.Syntax, ic.Version = value(els, 1, 0), value(els, 1, 1)
	ic.Sender = party(els, 2)
	ic.Recipient = party(els, 3)
	ic.Date, ic.Time = value(els, 4, 0), value(els, 4, 1)
	ic.ControlRef = trimKey(value(els, 5, 0))
	ic.AckRequest = value(els, 9, 0)
	ic.TestIndicator = trimKey(value(els, 11, 0))
	required := []struct{ elem, val, name string }{
		{"S001/0001", ic.Syntax, "syntax identifier"},
		{"S001/0002", ic.Version, "syntax version number"},
		{"S002/0004", ic.Sender.ID, "sender identification"},
		{"S003/0010", ic.Recipient.ID, "recipient identification"},
		{"0020", ic.ControlRef, "interchange control reference"},
	}
	for _, r := range required {
		if r.val == "" {
			return errorf("UNB", r.elem, off, "%s is missing or empty", r.name)
		}
	}
	return nil
}

func party(els [][]string, e int) Party {
	return Party{
		ID:        trimKey(value(els, e, 0)),
		Qualifier: trimKey(value(els, e, 1)),
		Internal:  value(els, e, 2),
		Sub:       value(els, e, 3),
	}
}
