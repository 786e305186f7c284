package ebms

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// charsetReader lets the decoder read the encodings AS4 envelopes use in
// practice besides UTF-8: US-ASCII and ISO-8859-1.
func charsetReader(label string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return r, nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "iso_8859-1":
		return &latin1Reader{r: r}, nil
	}
	return nil, fmt.Errorf("unsupported XML encoding %q (UTF-8, US-ASCII and ISO-8859-1 are supported)", label)
}

// latin1Reader converts ISO-8859-1 to UTF-8.
type latin1Reader struct {
	r   io.Reader
	buf []byte
	out []byte
}

// Read implements io.Reader.
func (l *latin1Reader) Read(p []byte) (int, error) {
	if len(l.out) == 0 {
		if cap(l.buf) == 0 {
			l.buf = make([]byte, 2048)
		}
		n, err := l.r.Read(l.buf)
		l.out = l.out[:0]
		for _, b := range l.buf[:n] {
			l.out = utf8.AppendRune(l.out, rune(b))
		}
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}
