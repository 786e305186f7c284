// Package scan is the buffered, offset-counting reader shared by the EDI
// parsers. Every byte the parsers consume goes through it, so the byte
// offsets in their errors are exact positions in the original input.
package scan

import (
	"bufio"
	"io"
)

// BufferSize is the read buffer size. It bounds the look-ahead used to sniff
// formats and to find an envelope behind leading junk.
const BufferSize = 64 << 10

// Reader is a bufio.Reader that counts the bytes consumed.
type Reader struct {
	br  *bufio.Reader
	off int64
}

// New returns a Reader on r. If r is a *bufio.Reader with at least
// BufferSize bytes of buffer it is used as is, so bytes another layer only
// peeked at are not lost.
func New(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, BufferSize)}
}

// Offset returns the number of bytes consumed so far.
func (r *Reader) Offset() int64 { return r.off }

// ReadByte consumes one byte.
func (r *Reader) ReadByte() (byte, error) {
	b, err := r.br.ReadByte()
	if err == nil {
		r.off++
	}
	return b, err
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.br.Read(p)
	r.off += int64(n)
	return n, err
}

// ReadSlice consumes bytes up to and including delim; see bufio.Reader.
// The slice is valid until the next read.
func (r *Reader) ReadSlice(delim byte) ([]byte, error) {
	b, err := r.br.ReadSlice(delim)
	r.off += int64(len(b))
	return b, err
}

// Peek returns the next n bytes without consuming them; see bufio.Reader.
func (r *Reader) Peek(n int) ([]byte, error) {
	if n > BufferSize {
		n = BufferSize
	}
	return r.br.Peek(n)
}

// Discard consumes n bytes.
func (r *Reader) Discard(n int64) (int64, error) {
	var done int64
	for done < n {
		chunk := n - done
		if chunk > BufferSize {
			chunk = BufferSize
		}
		k, err := r.br.Discard(int(chunk))
		done += int64(k)
		r.off += int64(k)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// SkipSpace consumes bytes while skip reports true for them and returns
// the first byte that is not skipped without consuming it. At the end of
// input it returns io.EOF.
func (r *Reader) SkipSpace(skip func(byte) bool) (byte, error) {
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			return 0, err
		}
		if !skip(b) {
			_ = r.br.UnreadByte()
			return b, nil
		}
		r.off++
	}
}

// IsLineSpace reports whether b is a space, tab, CR or LF.
func IsLineSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\r' || b == '\n'
}

// IsAlnum reports whether b is an ASCII letter or digit.
func IsAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
}

// Printable renders b for an error message: printable ASCII as itself,
// everything else as a Go escape.
func Printable(b byte) string {
	if b >= 0x21 && b <= 0x7e {
		return string(rune(b))
	}
	switch b {
	case ' ':
		return "space"
	case '\r':
		return `\r`
	case '\n':
		return `\n`
	case '\t':
		return `\t`
	}
	const hex = "0123456789abcdef"
	return `\x` + string(hex[b>>4]) + string(hex[b&15])
}
