package httpinbox

import (
	"errors"
	"fmt"
	"strings"
)

// ErrKeyInvalid is matched (errors.Is) by every *KeyError.
var ErrKeyInvalid = errors.New("httpinbox: invalid idempotency key")

// KeyError says why a request's key was refused (400).
type KeyError struct {
	// Reason is a sentence for the problem body's detail.
	Reason string
}

// Error says why the key was refused.
func (e *KeyError) Error() string { return "httpinbox: invalid idempotency key: " + e.Reason }

// Is reports whether target is ErrKeyInvalid.
func (e *KeyError) Is(target error) bool { return target == ErrKeyInvalid }

func keyErr(format string, args ...any) error { return &KeyError{Reason: fmt.Sprintf(format, args...)} }

// ParseIdempotencyKey parses the field lines of an Idempotency-Key header
// (draft-ietf-httpapi-idempotency-key-header): an Item Structured Field
// (RFC 8941) whose bare item is a String, with optional parameters, which
// are parsed and ignored. More than one field line, or a list of items in
// one, is an error, as is an empty string. It returns the string's value,
// unescaped.
func ParseIdempotencyKey(lines []string) (string, error) {
	switch len(lines) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", keyErr("%d Idempotency-Key header fields; send exactly one", len(lines))
	}
	p := sfParser{s: strings.Trim(lines[0], " \t")}
	key, err := p.sfString()
	if err != nil {
		return "", err
	}
	if err := p.parameters(); err != nil {
		return "", err
	}
	if p.i != len(p.s) {
		return "", keyErr("unexpected %q after the key at byte %d (one Structured Field String, as in Idempotency-Key: \"8e03978e-40d5-43e8-bc93-6894a57f9324\")", p.s[p.i], p.i)
	}
	if key == "" {
		return "", keyErr("the key is empty")
	}
	return key, nil
}

// sfParser reads the parts of RFC 8941 an Idempotency-Key uses.
type sfParser struct {
	s string
	i int
}

// sfString reads an sf-string (RFC 8941 section 4.2.5).
func (p *sfParser) sfString() (string, error) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", keyErr("the key must be a Structured Field String in double quotes, as in Idempotency-Key: \"8e03978e-40d5-43e8-bc93-6894a57f9324\"")
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.i >= len(p.s) {
				return "", keyErr("the key ends inside an escape")
			}
			n := p.s[p.i]
			p.i++
			if n != '"' && n != '\\' {
				return "", keyErr("invalid escape \\%c at byte %d (only \\\" and \\\\)", n, p.i-1)
			}
			b.WriteByte(n)
		case c == '"':
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", keyErr("byte 0x%02x at %d: a key holds printable ASCII only", c, p.i-1)
		default:
			b.WriteByte(c)
		}
	}
	return "", keyErr("the key's closing double quote is missing")
}

// parameters reads and drops RFC 8941 parameters (section 4.2.3.2).
func (p *sfParser) parameters() error {
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		for p.i < len(p.s) && p.s[p.i] == ' ' {
			p.i++
		}
		if err := p.paramKey(); err != nil {
			return err
		}
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			if err := p.bareItem(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *sfParser) paramKey() error {
	if p.i >= len(p.s) || !(p.s[p.i] == '*' || isLower(p.s[p.i])) {
		return keyErr("invalid parameter name at byte %d", p.i)
	}
	for p.i < len(p.s) && (isLower(p.s[p.i]) || isDigit(p.s[p.i]) || strings.IndexByte("_-.*", p.s[p.i]) >= 0) {
		p.i++
	}
	return nil
}

// bareItem reads a parameter's value: a string, a token, a number, a
// boolean or a byte sequence.
func (p *sfParser) bareItem() error {
	if p.i >= len(p.s) {
		return keyErr("a parameter's value is missing")
	}
	switch c := p.s[p.i]; {
	case c == '"':
		_, err := p.sfString()
		return err
	case c == '?':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
			p.i += 2
			return nil
		}
	case c == ':':
		end := strings.IndexByte(p.s[p.i+1:], ':')
		if end >= 0 && strings.Trim(p.s[p.i+1:p.i+1+end], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == "" {
			p.i += end + 2
			return nil
		}
	case c == '-' || isDigit(c):
		return p.number()
	case c == '*' || isAlpha(c):
		p.i++
		for p.i < len(p.s) && isTchar(p.s[p.i]) {
			p.i++
		}
		return nil
	}
	return keyErr("invalid parameter value at byte %d", p.i)
}

func (p *sfParser) number() error {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits, dot := 0, false
	for p.i < len(p.s) && (isDigit(p.s[p.i]) || (p.s[p.i] == '.' && !dot)) {
		if p.s[p.i] == '.' {
			dot = true
		} else {
			digits++
		}
		p.i++
	}
	if digits == 0 || digits > 15 || p.s[p.i-1] == '.' {
		return keyErr("invalid number at byte %d", start)
	}
	return nil
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return isLower(c) || (c >= 'A' && c <= 'Z') }

// isTchar reports an RFC 9110 tchar, or ':' and '/' (RFC 8941 sf-token).
func isTchar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}

// checkPlainKey checks the value of a configured key header or JSON
// field: visible ASCII (0x21 to 0x7e), not empty.
func checkPlainKey(key string) error {
	if key == "" {
		return keyErr("the key is empty")
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return keyErr("byte 0x%02x at %d: a key holds visible ASCII only", c, i)
		}
	}
	return nil
}
