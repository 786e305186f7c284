package ebms

import (
	"bufio"
	"bytes"
	"io"

	"github.com/txinbox/txinbox/edi/internal/scan"
)

// partBody reads one MIME part body up to its delimiter line, streaming:
// it holds back only the line end before a possible delimiter. After EOF,
// final reports whether the delimiter closed the multipart body.
type partBody struct {
	in          *scan.Reader
	delim       []byte // "--" + boundary
	atLineStart bool
	eol         []byte // line end held back from the previous line
	buf, out    []byte
	done, final bool
}

// Read implements io.Reader.
func (p *partBody) Read(b []byte) (int, error) {
	for len(p.out) == 0 {
		if p.done {
			return 0, io.EOF
		}
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(b, p.out)
	p.out = p.out[n:]
	return n, nil
}

// fill reads the next line (or buffer-sized piece of a long line).
func (p *partBody) fill() error {
	line, err := p.in.ReadSlice('\n')
	if len(line) == 0 && err != nil {
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if p.atLineStart {
		if isDelim, final := delimiterLine(line, p.delim); isDelim {
			p.done, p.final = true, final
			return nil
		}
	}
	content, eol := line, []byte(nil)
	if err == nil { // the line ends with '\n'; hold its line end back
		cut := len(line) - 1
		if cut > 0 && line[cut-1] == '\r' {
			cut--
		}
		content, eol = line[:cut], line[cut:]
	}
	p.buf = append(append(p.buf[:0], p.eol...), content...)
	p.eol = append(p.eol[:0], eol...)
	p.out = p.buf
	p.atLineStart = err == nil
	if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
		return err
	}
	return nil
}

// delimiterLine reports whether line is a delimiter line for delim and
// whether it is the close delimiter ("--boundary--"). Transport padding
// (spaces, tabs) before the line end is allowed.
func delimiterLine(line, delim []byte) (isDelim, final bool) {
	if !bytes.HasPrefix(line, delim) {
		return false, false
	}
	rest := line[len(delim):]
	if bytes.HasPrefix(rest, []byte("--")) {
		final, rest = true, rest[2:]
	}
	return len(bytes.Trim(rest, " \t\r\n")) == 0, final
}
