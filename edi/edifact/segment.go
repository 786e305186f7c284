package edifact

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxServiceSegment bounds the bytes kept of one service segment (UNB, UNZ,
// ...). Real ones are under 300 bytes; the bound keeps memory small on
// hostile input.
const maxServiceSegment = 4096

// maxTag is how many bytes of a tag are read before deciding the segment is
// not a service segment.
const maxTag = 8

// segment is one segment as the envelope walk sees it. raw is kept only for
// service segments: the segment with its tag, release characters and
// separators, without the terminator and without ignored line breaks.
type segment struct {
	tag    string // the tag of a service segment, "" for any other
	name   []byte // the tag as read, valid until the next read
	offset int64
	raw    []byte
}

// tagName returns the tag as read, for messages.
func (s segment) tagName() string { return string(s.name) }

// errTruncated reports input that ends inside a segment.
var errTruncated = errors.New("input ends inside the segment")

// serviceTag returns the tag if the envelope walk needs the segment's
// content (or its position, for UNA), else "". It allocates nothing: data
// segments are many.
func serviceTag(name []byte) string {
	switch string(name) {
	case "UNB":
		return "UNB"
	case "UNG":
		return "UNG"
	case "UNE":
		return "UNE"
	case "UNH":
		return "UNH"
	case "UNT":
		return "UNT"
	case "UNZ":
		return "UNZ"
	case "UNO":
		return "UNO"
	case "UNP":
		return "UNP"
	case "UNA":
		return "UNA"
	}
	return ""
}

// ignorable reports whether b is a line break that is not a service
// character; such bytes are dropped wherever they occur.
func (r *Reader) ignorable(b byte) bool {
	return (b == '\r' || b == '\n') && !r.seps.isService(b)
}

func (r *Reader) betweenSegments(b byte) bool {
	return r.ignorable(b) || ((b == ' ' || b == '\t') && !r.seps.isService(b))
}

// nextSegment reads the next non-empty segment. It returns io.EOF when the
// input ends between segments and errTruncated when it ends inside one.
func (r *Reader) nextSegment() (segment, error) {
	for {
		if _, err := r.in.SkipSpace(r.betweenSegments); err != nil {
			return segment{}, err
		}
		seg := segment{offset: r.in.Offset()}
		tag, end, pending, err := r.readTag()
		seg.name, seg.tag = tag, serviceTag(tag)
		if err != nil {
			return seg, eofAsTruncated(err)
		}
		if end == r.seps.Segment {
			if len(tag) == 0 {
				continue // empty segment
			}
			if seg.tag != "" {
				seg.raw = append(r.buf[:0], tag...)
			}
			return seg, nil
		}
		if seg.tag != "" && seg.tag != "UNA" && end != 0 {
			seg.raw, err = r.capture(append(append(r.buf[:0], tag...), end))
		} else {
			err = r.skipRest(pending)
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

// readTag reads the segment tag up to the first unreleased separator. It
// returns that separator as end, or 0 when maxTag bytes were read without
// one; pending reports a release character waiting for its next byte.
func (r *Reader) readTag() (tag []byte, end byte, pending bool, err error) {
	buf := r.tag[:]
	n := 0
	for n < maxTag {
		b, err := r.in.ReadByte()
		if err != nil {
			return buf[:n], 0, pending, err
		}
		switch {
		case r.ignorable(b):
		case pending:
			buf[n], pending = b, false
			n++
		case r.seps.Release != 0 && b == r.seps.Release:
			pending = true
		case b == r.seps.Segment || b == r.seps.Element || b == r.seps.Component:
			return buf[:n], b, false, nil
		default:
			buf[n] = b
			n++
		}
	}
	return buf[:n], 0, pending, nil
}

// capture reads the rest of a service segment into buf (which holds the
// tag and the separator after it) up to the unreleased terminator.
func (r *Reader) capture(buf []byte) ([]byte, error) {
	pending := false
	for {
		b, err := r.in.ReadByte()
		if err != nil {
			return buf, err
		}
		switch {
		case r.ignorable(b):
			continue
		case pending:
			pending = false
		case r.seps.Release != 0 && b == r.seps.Release:
			pending = true
		case b == r.seps.Segment:
			r.buf = buf[:0]
			return buf, nil
		}
		if len(buf) >= maxServiceSegment {
			return buf, errTooLong
		}
		buf = append(buf, b)
	}
}

var errTooLong = errors.New("segment too long")

// skipRest consumes the rest of a segment that is not kept, honouring the
// release character, in chunks of the read buffer.
func (r *Reader) skipRest(pending bool) error {
	rel := r.seps.Release
	for {
		chunk, err := r.in.ReadSlice(r.seps.Segment)
		ended := err == nil
		body := chunk
		if ended {
			body = chunk[:len(chunk)-1]
		}
		if rel != 0 && (pending || bytes.IndexByte(body, rel) >= 0) {
			pending = r.walkReleases(body, pending)
		}
		switch {
		case ended && !pending:
			return nil
		case ended:
			pending = false // a released terminator is data
		case err != bufio.ErrBufferFull:
			return err
		}
	}
}

// walkReleases returns whether a release character is still waiting for its
// next byte after b.
func (r *Reader) walkReleases(b []byte, pending bool) bool {
	for _, c := range b {
		switch {
		case r.ignorable(c):
		case pending:
			pending = false
		case c == r.seps.Release:
			pending = true
		}
	}
	return pending
}

// split un-escapes a captured service segment into data elements and their
// components; element 0 is the tag. The repetition separator is never
// structural in service segments and is kept as data.
func split(raw []byte, s Separators) [][]string {
	var (
		els     [][]string
		comps   []string
		cur     []byte
		pending bool
	)
	for _, c := range raw {
		switch {
		case pending:
			cur, pending = append(cur, c), false
		case s.Release != 0 && c == s.Release:
			pending = true
		case c == s.Element:
			els = append(els, append(comps, string(cur)))
			comps, cur = nil, cur[:0]
		case c == s.Component:
			comps, cur = append(comps, string(cur)), cur[:0]
		default:
			cur = append(cur, c)
		}
	}
	return append(els, append(comps, string(cur)))
}

// field returns component c of data element e of a captured segment,
// un-escaped; it equals value(split(raw, s), e, c).
func field(raw []byte, s Separators, e, c int) string {
	var buf [32]byte
	return string(appendField(buf[:0], raw, s, e, c))
}

// appendField appends component c of data element e of a captured segment,
// un-escaped, to dst. Unlike split it allocates nothing when dst has room,
// which matters for the UNH and UNT every message has.
func appendField(dst, raw []byte, s Separators, e, c int) []byte {
	var ei, ci int
	pending := false
	for _, b := range raw {
		switch {
		case pending:
			pending = false
		case s.Release != 0 && b == s.Release:
			pending = true
			continue
		case b == s.Element:
			ei, ci = ei+1, 0
			continue
		case b == s.Component:
			ci++
			continue
		}
		if ei == e && ci == c {
			dst = append(dst, b)
		} else if ei > e {
			break
		}
	}
	return dst
}

// value returns component c of data element e (both 0-based, element 0 is
// the tag), or "" when absent.
func value(els [][]string, e, c int) string {
	if e >= len(els) || c >= len(els[e]) {
		return ""
	}
	return els[e][c]
}
