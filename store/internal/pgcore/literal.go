package pgcore

import (
	"encoding/hex"
	"strings"
	"time"
)

// Array literals: PostgreSQL's text form of an array ({"a","b",NULL}),
// which every database/sql driver can send as a plain string parameter
// for a $n::text[], $n::bytea[] or $n::timestamptz[] (lib/pq cannot take
// a Go slice; pgx's stdlib can, but only pgx).

// ArrayLiteral returns the array literal of args' element i for i < n:
// elem appends element i's text to b and reports false for a NULL.
func ArrayLiteral(n int, elem func(b *strings.Builder, i int) bool) string {
	var b strings.Builder
	b.Grow(2 + n*24)
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		mark := b.Len()
		b.WriteByte('"')
		if !elem(&b, i) {
			s := b.String()[:mark]
			b.Reset()
			b.WriteString(s)
			b.WriteString("NULL")
			continue
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// QuoteElem appends s quoted for an array literal (within its double
// quotes: backslash and double quote escaped).
func QuoteElem(b *strings.Builder, s string) {
	if !strings.ContainsAny(s, `"\`) {
		b.WriteString(s)
		return
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}

// ByteaElem appends p as a bytea element (\x hex, its backslash escaped).
func ByteaElem(b *strings.Builder, p []byte) {
	b.WriteString(`\\x`)
	var buf [64]byte
	for len(p) > 0 {
		n := min(len(p), len(buf)/2)
		hex.Encode(buf[:], p[:n])
		b.Write(buf[:2*n])
		p = p[n:]
	}
}

// TimeFormat is a timestamptz element's text: microseconds, UTC.
const TimeFormat = "2006-01-02 15:04:05.999999Z07:00"

// TimeElem appends t as a timestamptz element.
func TimeElem(b *strings.Builder, t time.Time) {
	var buf [40]byte
	b.Write(t.UTC().AppendFormat(buf[:0], TimeFormat))
}

// Literal returns the array literal of a Go slice parameter ([]string,
// []*string, [][]byte, []time.Time), and false for any other value.
func Literal(arg any) (string, bool) {
	switch a := arg.(type) {
	case []string:
		return ArrayLiteral(len(a), func(b *strings.Builder, i int) bool { QuoteElem(b, a[i]); return true }), true
	case []*string:
		return ArrayLiteral(len(a), func(b *strings.Builder, i int) bool {
			if a[i] == nil {
				return false
			}
			QuoteElem(b, *a[i])
			return true
		}), true
	case [][]byte:
		return ArrayLiteral(len(a), func(b *strings.Builder, i int) bool {
			if a[i] == nil {
				return false
			}
			ByteaElem(b, a[i])
			return true
		}), true
	case []time.Time:
		return ArrayLiteral(len(a), func(b *strings.Builder, i int) bool { TimeElem(b, a[i]); return true }), true
	}
	return "", false
}
