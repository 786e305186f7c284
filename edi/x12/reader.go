package x12

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/txinbox/txinbox/edi/internal/scan"
	"github.com/txinbox/txinbox/edi/internal/segerr"
)

// Reader reads interchanges one after the other from a stream.
type Reader struct {
	in      *scan.Reader
	seps    Separators
	buf     []byte
	tag     [maxTag + 4]byte
	started bool
	err     error // sticky
}

// NewReader returns a Reader on r. It buffers r itself; a *bufio.Reader
// of at least 64 KiB is used without another layer.
func NewReader(r io.Reader) *Reader {
	return &Reader{in: scan.New(r)}
}

// Parse reads every interchange of r. It returns either all of them or an
// error: an input with one bad interchange yields none.
func Parse(r io.Reader) ([]*Interchange, error) {
	rd := NewReader(r)
	var out []*Interchange
	for {
		ic, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ic)
	}
}

// Next reads the next interchange, checking its envelope up to the IEA. It
// returns io.EOF after the last one and a *SyntaxError for an input that
// holds no interchange or a malformed one; errors are sticky.
func (r *Reader) Next() (*Interchange, error) {
	if r.err != nil {
		return nil, r.err
	}
	ic, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	return ic, nil
}

func isTrailer(b byte) bool { return scan.IsLineSpace(b) || b == 0 || b == 0x1a }

func (r *Reader) next() (*Interchange, error) {
	if !r.started {
		if p, _ := r.in.Peek(3); bytes.Equal(p, []byte("\xef\xbb\xbf")) {
			_, _ = r.in.Discard(3)
		}
	}
	if _, err := r.in.SkipSpace(isTrailer); err != nil {
		if r.started {
			return nil, err // io.EOF: clean end
		}
		return nil, errorf("ISA", "", r.in.Offset(), "no interchange: the input is empty")
	}
	if p, _ := r.in.Peek(3); !bytes.Equal(p, []byte("ISA")) {
		p, _ = r.in.Peek(16)
		if r.started {
			return nil, errorf("", "", r.in.Offset(), "unexpected data %q after IEA (expected ISA or the end of input)", p)
		}
		return nil, errorf("ISA", "", r.in.Offset(), "no interchange: input starts with %q, not ISA", p)
	}
	r.started = true
	ic, err := r.readISA()
	if err != nil {
		return nil, err
	}
	r.seps = ic.Separators
	if err := r.readBody(ic); err != nil {
		return nil, err
	}
	ic.End = r.in.Offset()
	return ic, nil
}

// walk is the state of the envelope walk through one interchange.
type walk struct {
	ic             *Interchange
	inGroup, inSet bool
	groupRef       string
	groupAt, setAt int64
	groupSets      int
	setRef         []byte // reused: sets are many, allocations per set are avoided
}

func (r *Reader) readBody(ic *Interchange) error {
	w := &walk{ic: ic}
	for {
		seg, err := r.nextSegment()
		if err != nil {
			return r.bodyReadError(w, seg, err)
		}
		done, err := w.step(seg)
		if done || err != nil {
			return err
		}
	}
}

func (r *Reader) bodyReadError(w *walk, seg segment, err error) error {
	switch {
	case err == io.EOF:
		return errorf("IEA", "", r.in.Offset(), "missing: input ends before the IEA of interchange %q (ISA at byte %d): the interchange is truncated", w.ic.ControlNumber, w.ic.Offset)
	case err == errTruncated:
		return errorf(seg.tagName(), "", seg.offset, "input ends inside the segment (no segment terminator %q): the interchange is truncated", r.seps.Segment)
	case errors.Is(err, errTooLong):
		return errorf(seg.tagName(), "", seg.offset, "segment longer than %d bytes", maxServiceSegment)
	}
	var se *SyntaxError
	if errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("x12: reading at byte %d: %w", r.in.Offset(), err)
}

// step handles one segment; done is true at the IEA.
func (w *walk) step(seg segment) (done bool, err error) {
	if w.inSet && seg.tag != "SE" {
		switch seg.tag {
		case "ST", "GS", "GE", "IEA", "ISA":
			return false, errorf(seg.tag, "", seg.offset, "transaction set %q (ST at byte %d) has no SE", w.setRef, w.setAt)
		}
		return false, nil
	}
	switch seg.tag {
	case "GS":
		return false, w.startGroup(seg)
	case "GE":
		return false, w.endGroup(seg)
	case "ST":
		return false, w.startSet(seg)
	case "SE":
		return false, w.endSet(seg)
	case "IEA":
		return true, w.end(seg)
	case "TA1", "ISB", "ISE", "ISX":
		if w.inGroup {
			return false, errorf(seg.tag, "", seg.offset, "interchange-level segment inside group %q (GS at byte %d)", w.groupRef, w.groupAt)
		}
		if seg.tag == "TA1" {
			w.ic.Acks++
		}
		return false, nil
	case "ISA":
		return false, errorf("ISA", "", seg.offset, "interchange %q (ISA at byte %d) has no IEA", w.ic.ControlNumber, w.ic.Offset)
	}
	where := "a functional group (GS…GE)"
	if w.inGroup {
		where = "a transaction set (ST…SE)"
	}
	return false, errorf(seg.tagName(), "", seg.offset, "segment %s is outside %s", segerr.TagString(seg.tagName()), where)
}

func (w *walk) startGroup(seg segment) error {
	if w.inGroup {
		return errorf("GS", "", seg.offset, "group %q (GS at byte %d) has no GE", w.groupRef, w.groupAt)
	}
	w.groupRef = string(seg.elem(6))
	if w.groupRef == "" {
		return errorf("GS", "GS06", seg.offset, "group control number is missing or empty")
	}
	w.inGroup, w.groupAt, w.groupSets = true, seg.offset, 0
	w.ic.Groups++
	return nil
}

func (w *walk) endGroup(seg segment) error {
	if !w.inGroup {
		return errorf("GE", "", seg.offset, "GE without a GS")
	}
	w.inGroup = false
	if err := checkCount("GE", "GE01", seg, w.groupSets, "transaction set", "transaction sets"); err != nil {
		return err
	}
	if ref := string(seg.elem(2)); ref != w.groupRef {
		return errorf("GE", "GE02", seg.offset, "group control number %q does not match %q in the GS at byte %d", ref, w.groupRef, w.groupAt)
	}
	return nil
}

func (w *walk) startSet(seg segment) error {
	if !w.inGroup {
		return errorf("ST", "", seg.offset, "transaction set outside a functional group (no GS)")
	}
	w.setRef = append(w.setRef[:0], seg.elem(2)...)
	if len(w.setRef) == 0 {
		return errorf("ST", "ST02", seg.offset, "transaction set control number is missing or empty")
	}
	w.inSet, w.setAt = true, seg.offset
	w.groupSets++
	w.ic.Sets++
	return nil
}

func (w *walk) endSet(seg segment) error {
	if !w.inSet {
		return errorf("SE", "", seg.offset, "SE without an ST")
	}
	w.inSet = false
	if ref := seg.elem(2); !bytes.Equal(ref, w.setRef) {
		return errorf("SE", "SE02", seg.offset, "transaction set control number %q does not match %q in the ST at byte %d", ref, w.setRef, w.setAt)
	}
	return nil
}

// end checks the IEA. IEA01 counts functional groups; an interchange with no
// group but TA1 acknowledgements is checked against the TA1 count, as the
// TA1-only sample does.
func (w *walk) end(seg segment) error {
	if w.inGroup {
		return errorf("IEA", "", seg.offset, "group %q (GS at byte %d) has no GE", w.groupRef, w.groupAt)
	}
	n, one, many := w.ic.Groups, "functional group", "functional groups"
	if n == 0 && w.ic.Acks > 0 {
		n, one, many = w.ic.Acks, "TA1 acknowledgement", "TA1 acknowledgements"
	}
	if err := checkCount("IEA", "IEA01", seg, n, one, many); err != nil {
		return err
	}
	if ref := string(seg.elem(2)); ref != w.ic.ControlNumber {
		return errorf("IEA", "IEA02", seg.offset, "interchange control number %q does not match %q in the ISA at byte %d", ref, w.ic.ControlNumber, w.ic.Offset)
	}
	return nil
}

func checkCount(tag, name string, seg segment, n int, one, many string) error {
	v := string(seg.elem(1))
	got, err := strconv.Atoi(v)
	if err != nil || got < 0 {
		return errorf(tag, name, seg.offset, "count %q is not a number", v)
	}
	if got != n {
		what := many
		if n == 1 {
			what = one
		}
		return errorf(tag, name, seg.offset, "count %d does not match %d %s", got, n, what)
	}
	return nil
}
