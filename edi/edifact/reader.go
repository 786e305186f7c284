package edifact

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/txinbox/txinbox/edi/internal/scan"
)

// Reader reads interchanges one after the other from a stream.
type Reader struct {
	in      *scan.Reader
	seps    Separators
	buf     []byte // reused capture buffer
	tag     [maxTag]byte
	started bool  // the first interchange has been found
	err     error // sticky: the error Next returned last
}

// NewReader returns a Reader on r. It buffers r itself; a *bufio.Reader
// of at least 64 KiB is used without another layer.
func NewReader(r io.Reader) *Reader {
	return &Reader{in: scan.New(r), seps: DefaultSeparators}
}

// Parse reads every interchange of r. It returns either all of them or an
// error: an input with one bad interchange yields no keys.
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

// Next reads the next interchange, checking its envelope up to the UNZ. It
// returns io.EOF after the last one, and a *SyntaxError for an input that
// holds no interchange at all or a malformed one; errors are sticky.
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

func (r *Reader) next() (*Interchange, error) {
	if err := r.findStart(); err != nil {
		return nil, err
	}
	r.started = true
	ic, err := r.readHeader()
	if err != nil {
		return nil, err
	}
	if err := r.readBody(ic); err != nil {
		return nil, err
	}
	ic.End = r.in.Offset()
	return ic, nil
}

func isTrailer(b byte) bool { return scan.IsLineSpace(b) || b == 0 || b == 0x1a }

// findStart positions the input on the next UNA or UNB. Before the first
// interchange it skips a byte order mark and any leading junk within the
// look-ahead window; after one it allows only white space, NUL and ^Z.
func (r *Reader) findStart() error {
	if r.started {
		if _, err := r.in.SkipSpace(isTrailer); err != nil {
			return err // io.EOF: clean end
		}
		p, _ := r.in.Peek(3)
		if !bytes.Equal(p, []byte("UNA")) && !bytes.Equal(p, []byte("UNB")) {
			p, _ = r.in.Peek(16)
			return errorf("", "", r.in.Offset(), "unexpected data %q after UNZ (expected UNA, UNB or the end of input)", p)
		}
		return nil
	}
	if p, _ := r.in.Peek(3); bytes.Equal(p, []byte("\xef\xbb\xbf")) {
		_, _ = r.in.Discard(3)
	}
	if _, err := r.in.SkipSpace(scan.IsLineSpace); err != nil {
		return errorf("UNB", "", r.in.Offset(), "no interchange: the input is empty")
	}
	window, _ := r.in.Peek(scan.BufferSize)
	at := FindStart(window)
	if at < 0 {
		return errorf("UNB", "", r.in.Offset(), "no interchange: no UNA or UNB segment in the first %d bytes", len(window))
	}
	_, err := r.in.Discard(int64(at))
	return err
}

// FindStart returns the index in p of the UNA or UNB that starts the first
// interchange, or -1. A UNB must begin p or follow a byte that is not a
// letter or digit, and be followed by a separator; a UNA must be followed,
// after its six service characters and optional white space, by UNB.
func FindStart(p []byte) int {
	for i := 0; ; {
		j := bytes.Index(p[i:], []byte("UN"))
		if j < 0 {
			return -1
		}
		i += j
		if i == 0 || !scan.IsAlnum(p[i-1]) {
			if isUNBAt(p, i) || isUNAAt(p, i) {
				return i
			}
		}
		i += 2
	}
}

func isUNBAt(p []byte, i int) bool {
	return len(p) > i+3 && p[i+2] == 'B' && !scan.IsAlnum(p[i+3])
}

func isUNAAt(p []byte, i int) bool {
	if len(p) < i+9 || p[i+2] != 'A' {
		return false
	}
	rest := bytes.TrimLeft(p[i+9:], " \t\r\n")
	return len(rest) >= 4 && isUNBAt(rest, 0)
}

// readHeader reads the optional UNA and the UNB.
func (r *Reader) readHeader() (*Interchange, error) {
	ic := &Interchange{Offset: r.in.Offset()}
	if p, _ := r.in.Peek(9); bytes.HasPrefix(p, []byte("UNA")) {
		if len(p) < 9 {
			return nil, errorf("UNA", "", ic.Offset, "truncated: UNA needs 6 service characters")
		}
		r.seps, ic.HasUNA = parseUNA(p[3:9]), true
		probe := r.seps
		probe.Repetition = 0 // its role depends on the version, checked after the UNB
		if err := probe.check(); err != nil {
			return nil, errorf("UNA", "", ic.Offset, "%v", err)
		}
		_, _ = r.in.Discard(9)
	} else {
		p, _ = r.in.Peek(32)
		r.seps = sniffSeparators(p)
	}
	seg, err := r.nextSegment()
	if err != nil || seg.tag != "UNB" {
		return nil, r.unbMissing(ic, seg, err)
	}
	if err := decodeUNB(ic, split(seg.raw, r.seps), seg.offset); err != nil {
		return nil, err
	}
	if err := r.seps.applyVersion(ic.Version, ic.HasUNA); err != nil {
		return nil, errorf("UNA", "", ic.Offset, "%v", err)
	}
	ic.Separators = r.seps
	return ic, nil
}

func (r *Reader) unbMissing(ic *Interchange, seg segment, err error) error {
	switch {
	case errors.Is(err, errTooLong):
		return errorf("UNB", "", seg.offset, "segment longer than %d bytes (no segment terminator %s?)", maxServiceSegment, scan.Printable(r.seps.Segment))
	case err == io.EOF || (err == errTruncated && seg.tag != "UNB"):
		return errorf("UNB", "", r.in.Offset(), "missing: input ends after the UNA at byte %d", ic.Offset)
	case err == errTruncated:
		return errorf("UNB", "", seg.offset, "input ends inside the segment (no segment terminator %s)", scan.Printable(r.seps.Segment))
	case err != nil:
		return fmt.Errorf("edifact: reading UNB at byte %d: %w", seg.offset, err)
	}
	return errorf("UNB", "", seg.offset, "expected UNB after the UNA at byte %d, found %q", ic.Offset, seg.tagName())
}
