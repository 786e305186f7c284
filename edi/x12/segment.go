package x12

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
)

// maxServiceSegment bounds the bytes kept of one envelope segment.
const maxServiceSegment = 4096

// maxTag is how many bytes of a tag are read before deciding the segment is
// not one the envelope walk needs.
const maxTag = 8

var errTruncated = errors.New("input ends inside the segment")
var errTooLong = errors.New("segment too long")

// serviceTag returns the tag if the envelope walk reads the segment's
// elements, else "". It allocates nothing: data segments are many.
func serviceTag(name []byte) string {
	switch string(name) {
	case "ISA":
		return "ISA"
	case "IEA":
		return "IEA"
	case "GS":
		return "GS"
	case "GE":
		return "GE"
	case "ST":
		return "ST"
	case "SE":
		return "SE"
	case "TA1":
		return "TA1"
	case "ISB":
		return "ISB"
	case "ISE":
		return "ISE"
	case "ISX":
		return "ISX"
	case "BIN":
		return "BIN"
	case "BDS":
		return "BDS"
	}
	return ""
}

// segment is one segment as the envelope walk sees it.
type segment struct {
	tag    string // the tag of an envelope segment, "" for any other
	name   []byte // the tag as read, valid until the next read
	offset int64
	raw    []byte // the elements after the tag, for envelope segments; valid until the next read
	sep    byte
}

// tagName returns the tag as read, for messages.
func (s segment) tagName() string { return string(s.name) }

// elem returns element i (1-based) of the segment, spaces trimmed, as a
// slice of the segment: no allocation.
func (s segment) elem(i int) []byte {
	rest := s.raw
	for k := 1; k < i; k++ {
		j := bytes.IndexByte(rest, s.sep)
		if j < 0 {
			return nil
		}
		rest = rest[j+1:]
	}
	if j := bytes.IndexByte(rest, s.sep); j >= 0 {
		rest = rest[:j]
	}
	return bytes.TrimSpace(rest)
}

func (r *Reader) isTerm(b byte) bool { return bytes.IndexByte([]byte(r.seps.Segment), b) >= 0 }

// ignorable reports whether b is a line break that is not part of the
// terminator; such bytes are dropped inside segments.
func (r *Reader) ignorable(b byte) bool {
	return (b == '\r' || b == '\n') && !r.isTerm(b) && b != r.seps.Element
}

func (r *Reader) betweenSegments(b byte) bool {
	return r.ignorable(b) || (b == ' ' || b == '\t') && !r.isTerm(b) && b != r.seps.Element
}

// nextSegment reads the next non-empty segment. It returns io.EOF when the
// input ends between segments and errTruncated when it ends inside one.
func (r *Reader) nextSegment() (segment, error) {
	for {
		if _, err := r.in.SkipSpace(r.betweenSegments); err != nil {
			return segment{}, err
		}
		seg := segment{offset: r.in.Offset(), sep: r.seps.Element}
		tag, ended, err := r.readTag()
		seg.name, seg.tag = tag, serviceTag(tag)
		switch {
		case err != nil:
			return seg, eofAsTruncated(err)
		case ended && len(tag) == 0:
			continue
		case ended:
			return seg, nil
		case seg.tag == "BIN" || seg.tag == "BDS":
			err = r.skipBinary(seg)
		case seg.tag != "":
			seg.raw, err = r.capture()
		default:
			err = r.skipTo(tag)
		}
		return seg, eofAsTruncated(err)
	}
}

func eofAsTruncated(err error) error {
	if err == io.EOF {
		return errTruncated
	}
	return err
}

// readTag reads up to the first element separator (ended false) or the
// end of the segment (ended true), at most maxTag bytes.
func (r *Reader) readTag() (tag []byte, ended bool, err error) {
	buf := r.tag[:0]
	for len(buf) < maxTag {
		b, err := r.in.ReadByte()
		if err != nil {
			return buf, false, err
		}
		if r.ignorable(b) {
			continue
		}
		if b == r.seps.Element {
			return buf, false, nil
		}
		buf = append(buf, b)
		if bytes.HasSuffix(buf, []byte(r.seps.Segment)) {
			return buf[:len(buf)-len(r.seps.Segment)], true, nil
		}
	}
	return buf, false, nil
}

// capture reads the rest of an envelope segment into the reused buffer,
// without the terminator.
func (r *Reader) capture() ([]byte, error) {
	buf := r.buf[:0]
	term := []byte(r.seps.Segment)
	for !bytes.HasSuffix(buf, term) {
		b, err := r.in.ReadByte()
		if err != nil {
			return nil, err
		}
		if r.ignorable(b) {
			continue
		}
		if len(buf) >= maxServiceSegment {
			return nil, errTooLong
		}
		buf = append(buf, b)
	}
	r.buf = buf
	return buf[:len(buf)-len(term)], nil
}

// skipTo consumes input up to and including the next segment terminator;
// prev are bytes of the segment already read, which may hold the start of
// a multi-byte terminator.
func (r *Reader) skipTo(prev []byte) error {
	term := []byte(r.seps.Segment)
	last, keep := term[len(term)-1], len(term)-1
	tail := keepTail(nil, prev, keep)
	for {
		chunk, err := r.in.ReadSlice(last)
		if err == nil && (keep == 0 || endsWith(tail, chunk, term)) {
			return nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return err
		}
		tail = keepTail(tail, chunk, keep)
	}
}

// endsWith reports whether tail followed by chunk ends with term.
func endsWith(tail, chunk, term []byte) bool {
	if len(chunk) >= len(term) {
		return bytes.HasSuffix(chunk, term)
	}
	var buf [8]byte
	joined := append(append(buf[:0], tail...), chunk...)
	return bytes.HasSuffix(joined, term)
}

// keepTail returns the last keep bytes of tail followed by chunk.
func keepTail(tail, chunk []byte, keep int) []byte {
	if keep == 0 {
		return tail[:0]
	}
	if len(chunk) >= keep {
		return append(tail[:0], chunk[len(chunk)-keep:]...)
	}
	tail = append(tail, chunk...)
	return append(tail[:0], tail[len(tail)-min(keep, len(tail)):]...)
}

// skipBinary skips a BIN (BIN01 length, BIN02 data) or BDS (BDS01 filter,
// BDS02 length, BDS03 data) segment by the declared length, so binary data
// may hold any byte, the terminator included.
func (r *Reader) skipBinary(seg segment) error {
	if seg.tag == "BDS" {
		if _, err := r.readElement(); err != nil {
			return err
		}
	}
	lenElem := map[string]string{"BIN": "BIN01", "BDS": "BDS02"}[seg.tag]
	v, err := r.readElement()
	if err != nil {
		return err
	}
	n, perr := strconv.ParseInt(string(v), 10, 64)
	if perr != nil || n < 0 {
		return errorf(seg.tag, lenElem, seg.offset, "binary data length %q is not a number", v)
	}
	if _, err := r.in.Discard(n); err != nil {
		return err
	}
	term := []byte(r.seps.Segment)
	p, err := r.in.Peek(len(term))
	if !bytes.Equal(p, term) {
		if err != nil {
			return err
		}
		return errorf(seg.tag, lenElem, seg.offset, "binary data of %d bytes is not followed by the segment terminator %q", n, r.seps.Segment)
	}
	_, err = r.in.Discard(int64(len(term)))
	return err
}

// readElement reads bytes up to the next element separator (at most 32).
func (r *Reader) readElement() ([]byte, error) {
	var v []byte
	for len(v) <= 32 {
		b, err := r.in.ReadByte()
		if err != nil {
			return v, err
		}
		if b == r.seps.Element {
			return v, nil
		}
		if !r.ignorable(b) {
			v = append(v, b)
		}
	}
	return v, nil
}
