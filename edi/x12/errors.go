package x12

import (
	"fmt"

	"github.com/txinbox/txinbox/edi/internal/segerr"
)

// SyntaxError reports an interchange envelope that cannot be read or that
// fails a check (ISA too short, IEA count or control number mismatch, ...).
type SyntaxError struct {
	// Segment is the tag of the segment at fault, e.g. "IEA"; for a segment
	// that is missing it is the tag that was expected.
	Segment string
	// Element is the element at fault, e.g. "IEA01"; empty when the error
	// concerns the whole segment.
	Element string
	// Offset is the byte offset of the segment in the input, or where the
	// input ended for a missing segment.
	Offset int64
	// Msg says what is wrong.
	Msg string
}

// Error returns a message such as
// "x12: IEA element IEA02 at byte 280: interchange control number "2" does not match "1" in the ISA at byte 0".
func (e *SyntaxError) Error() string {
	return segerr.Format("x12", e.Segment, e.Element, e.Offset, e.Msg)
}

func errorf(seg, elem string, off int64, format string, args ...any) *SyntaxError {
	return &SyntaxError{Segment: seg, Element: elem, Offset: off, Msg: fmt.Sprintf(format, args...)}
}
