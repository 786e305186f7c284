package edifact

import (
	"fmt"

	"github.com/txinbox/txinbox/edi/internal/segerr"
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
	return segerr.Format("edifact", e.Segment, e.Element, e.Offset, e.Msg)
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
