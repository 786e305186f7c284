package edifact

import (
	"fmt"
	"strconv"
	"strings"
)

// SyntaxError reports an interchange envelope that cannot be read or that
// fails a check (missing UNZ, control count or reference mismatch, ...).
type SyntaxError struct {
	// Segment is the tag of the segment at fault, e.g. "UNZ"; for a segment
	// that is missing it is the tag that was expected.
	Segment string
	// Element is the data element at fault as named by ISO 9735, e.g.
	// "0036" or "S002/0004"; empty when the error concerns the whole segment.
	Element string
	// Offset is the byte offset of the segment in the input, or where the
	// input ended for a missing segment.
	Offset int64
	// Msg says what is wrong.
	Msg string
}

// Error returns a message such as
// "edifact: UNZ element 0036 at byte 1234: control count 3 does not match 2 messages".
func (e *SyntaxError) Error() string {
	var b strings.Builder
	b.WriteString("edifact: ")
	if e.Segment != "" {
		b.WriteString(tagString(e.Segment))
		if e.Element != "" {
			b.WriteString(" element ")
			b.WriteString(e.Element)
		}
		b.WriteString(" at")
	} else {
		b.WriteString("at")
	}
	fmt.Fprintf(&b, " byte %d: %s", e.Offset, e.Msg)
	return b.String()
}

// tagString prints a clean tag as is and anything else quoted.
func tagString(tag string) string {
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return strconv.Quote(tag)
		}
	}
	return tag
}

func errorf(seg, elem string, off int64, format string, args ...any) *SyntaxError {
	return &SyntaxError{Segment: seg, Element: elem, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
