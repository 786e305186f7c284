package edifact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/txinbox/txinbox/edi/internal/scan"
)

// walk is the state of the envelope walk through one interchange.
type walk struct {
	ic        *Interchange
	inGroup   bool
	groupRef  string
	groupAt   int64
	groupMsgs int
	ungrouped int // messages outside any group
	inMsg     bool
	msgRef    []byte // reused: messages are many, allocations per message are avoided
	scratch   []byte
	msgAt     int64
}

// readBody walks the segments after the UNB up to and including the UNZ.
func (r *Reader) readBody(ic *Interchange) error {
	w := &walk{ic: ic}
	for {
		seg, err := r.nextSegment()
		if err != nil {
			return r.bodyReadError(w, seg, err)
		}
		if w.inMsg {
			if err := w.inMessage(seg, r.seps); err != nil {
				return err
			}
			continue
		}
		done, err := w.outsideMessage(seg, r.seps)
		if done || err != nil {
			return err
		}
	}
}

func (r *Reader) bodyReadError(w *walk, seg segment, err error) error {
	switch {
	case err == io.EOF:
		open := ""
		if w.inMsg {
			open = fmt.Sprintf(", message %q (UNH at byte %d) has no UNT", w.msgRef, w.msgAt)
		}
		return errorf("UNZ", "", r.in.Offset(), "missing: input ends before the UNZ of interchange %q (UNB at byte %d)%s: the interchange is truncated",
			w.ic.ControlRef, w.ic.Offset, open)
	case err == errTruncated:
		return errorf(seg.tagName(), "", seg.offset, "input ends inside the segment (no segment terminator %s): the interchange is truncated", scan.Printable(r.seps.Segment))
	case errors.Is(err, errTooLong):
		return errorf(seg.tagName(), "", seg.offset, "segment longer than %d bytes", maxServiceSegment)
	}
	return fmt.Errorf("edifact: reading at byte %d: %w", r.in.Offset(), err)
}

// inMessage handles a segment between UNH and UNT: only UNT matters, and
// envelope segments mean the UNT is missing.
func (w *walk) inMessage(seg segment, s Separators) error {
	switch seg.tag {
	case "UNT":
		w.inMsg = false
		w.scratch = trimRight(appendField(w.scratch[:0], seg.raw, s, 2, 0))
		if !bytes.Equal(w.scratch, w.msgRef) {
			return errorf("UNT", "0062", seg.offset, "message reference %q does not match %q in the UNH at byte %d", w.scratch, w.msgRef, w.msgAt)
		}
		return nil
	case "UNH", "UNG", "UNE", "UNZ", "UNB", "UNA", "UNO", "UNP":
		return errorf(seg.tag, "", seg.offset, "message %q (UNH at byte %d) has no UNT", w.msgRef, w.msgAt)
	}
	return nil
}

// outsideMessage handles a segment between messages; done is true at UNZ.
func (w *walk) outsideMessage(seg segment, s Separators) (done bool, err error) {
	switch seg.tag {
	case "UNH":
		return false, w.startMessage(seg, s)
	case "UNG":
		return false, w.startGroup(seg, s)
	case "UNE":
		return false, w.endGroup(seg, s)
	case "UNZ":
		return true, w.end(seg, s)
	case "UNO", "UNP":
		return false, errorf(seg.tag, "", seg.offset, "packages (UNO…UNP, syntax version 4 part 8) are not supported")
	case "UNA", "UNB":
		return false, errorf(seg.tag, "", seg.offset, "interchange %q (UNB at byte %d) has no UNZ", w.ic.ControlRef, w.ic.Offset)
	}
	return false, errorf(seg.tagName(), "", seg.offset, "segment is outside a message (expected UNH, UNG, UNE or UNZ)")
}

func (w *walk) startMessage(seg segment, s Separators) error {
	if w.ic.Groups > 0 && !w.inGroup {
		return errorf("UNH", "", seg.offset, "groups and messages mixed: UNH outside a group in an interchange that has groups")
	}
	w.msgRef = trimRight(appendField(w.msgRef[:0], seg.raw, s, 1, 0))
	if len(w.msgRef) == 0 {
		return errorf("UNH", "0062", seg.offset, "message reference number is missing or empty")
	}
	w.inMsg, w.msgAt = true, seg.offset
	w.ic.Messages++
	w.groupMsgs++
	if !w.inGroup {
		w.ungrouped++
	}
	return nil
}

func (w *walk) startGroup(seg segment, s Separators) error {
	switch {
	case w.inGroup:
		return errorf("UNG", "", seg.offset, "group %q (UNG at byte %d) has no UNE", w.groupRef, w.groupAt)
	case w.ungrouped > 0:
		return errorf("UNG", "", seg.offset, "groups and messages mixed: UNG after a message outside any group")
	}
	w.groupRef = trimKey(field(seg.raw, s, 5, 0))
	if w.groupRef == "" {
		return errorf("UNG", "0048", seg.offset, "group reference number is missing or empty")
	}
	w.inGroup, w.groupAt, w.groupMsgs = true, seg.offset, 0
	w.ic.Groups++
	return nil
}

func (w *walk) endGroup(seg segment, s Separators) error {
	if !w.inGroup {
		return errorf("UNE", "", seg.offset, "UNE without a UNG")
	}
	w.inGroup = false
	els := split(seg.raw, s)
	if err := checkCount("UNE", "0060", seg.offset, value(els, 1, 0), w.groupMsgs, "message", "messages"); err != nil {
		return err
	}
	if ref := trimKey(value(els, 2, 0)); ref != w.groupRef {
		return errorf("UNE", "0048", seg.offset, "group reference %q does not match %q in the UNG at byte %d", ref, w.groupRef, w.groupAt)
	}
	return nil
}

// end checks the UNZ: control count and reference.
func (w *walk) end(seg segment, s Separators) error {
	if w.inGroup {
		return errorf("UNZ", "", seg.offset, "group %q (UNG at byte %d) has no UNE", w.groupRef, w.groupAt)
	}
	els := split(seg.raw, s)
	n, one, many := w.ic.Messages, "message", "messages"
	if w.ic.Groups > 0 {
		n, one, many = w.ic.Groups, "group", "groups"
	}
	if err := checkCount("UNZ", "0036", seg.offset, value(els, 1, 0), n, one, many); err != nil {
		return err
	}
	if ref := trimKey(value(els, 2, 0)); ref != w.ic.ControlRef {
		return errorf("UNZ", "0020", seg.offset, "interchange control reference %q does not match %q in the UNB at byte %d", ref, w.ic.ControlRef, w.ic.Offset)
	}
	return nil
}

func trimRight(b []byte) []byte { return bytes.TrimRight(b, " ") }

func checkCount(tag, elem string, off int64, v string, n int, one, many string) error {
	got, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || got < 0 {
		return errorf(tag, elem, off, "control count %q is not a number", v)
	}
	if got != n {
		return errorf(tag, elem, off, "control count %d does not match %s", got, plural(n, one, many))
	}
	return nil
}
