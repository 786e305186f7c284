package edi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/edi/edifact"
	"github.com/txinbox/txinbox/edi/x12"
)

// sniffWindow is how many bytes Keys looks at to recognise the syntax.
const sniffWindow = 64 << 10

// ErrUnknownFormat reports an input that is neither EDIFACT, X12 nor AS4.
var ErrUnknownFormat = errors.New("edi: unknown format")

// EdifactKey returns the key of an EDIFACT interchange.
func EdifactKey(ic *edifact.Interchange) Key {
	k := newKey(KindEDIFACT, ic.Offset, ic.Key()...)
	k.Syntax = ic.Syntax
	return k
}

// X12Key returns the key of an X12 interchange.
func X12Key(ic *x12.Interchange) Key {
	return newKey(KindX12, ic.Offset, ic.Key()...)
}

// AS4Key returns the key of an AS4 user message: the first From PartyId,
// its type and the MessageId. The same MessageId from another party is
// another message.
func AS4Key(m *ebms.Message) Key {
	s := m.Sender()
	return newKey(KindAS4, m.Offset, s.ID, s.Type, m.MessageID)
}

// Keys reads r, recognises EDIFACT (UNA/UNB, also behind a short
// proprietary header), X12 (ISA) or AS4 (a SOAP envelope, or MIME headers
// followed by a multipart/related body) and returns the key of every
// interchange or the key of the AS4 user message. It returns either all
// keys or an error: an input with one bad interchange yields no keys.
//
// The error is ErrUnknownFormat (wrapped) for anything else, or the
// parser's: *edifact.SyntaxError, *x12.SyntaxError, or one of the ebms
// errors (*ebms.SignalError for a receipt, error or pull request signal).
func Keys(r io.Reader) ([]Key, error) {
	br := bufio.NewReaderSize(r, sniffWindow)
	window, err := br.Peek(sniffWindow)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		// bufio hands a read error out once: the parser after the sniff
		// would take the input as ending here.
		return nil, fmt.Errorf("edi: reading the input: %w", err)
	}
	switch f := sniff(window); f {
	case KindEDIFACT:
		return edifactKeys(br)
	case KindX12:
		return x12Keys(br)
	case KindAS4:
		return KeysMIME(br, "")
	default:
		return nil, unknown(window)
	}
}

// KeysMIME returns the key of an AS4 message whose Content-Type is known,
// e.g. an HTTP request body; see ebms.Parse.
func KeysMIME(r io.Reader, contentType string) ([]Key, error) {
	m, err := ebms.Parse(r, contentType)
	if err != nil {
		return nil, err
	}
	return []Key{AS4Key(m)}, nil
}

func edifactKeys(r io.Reader) ([]Key, error) {
	ics, err := edifact.Parse(r)
	if err != nil {
		return nil, err
	}
	keys := make([]Key, len(ics))
	for i, ic := range ics {
		keys[i] = EdifactKey(ic)
	}
	return keys, nil
}

func x12Keys(r io.Reader) ([]Key, error) {
	ics, err := x12.Parse(r)
	if err != nil {
		return nil, err
	}
	keys := make([]Key, len(ics))
	for i, ic := range ics {
		keys[i] = X12Key(ic)
	}
	return keys, nil
}

// sniff recognises the syntax from the first bytes; "" if none.
func sniff(p []byte) Kind {
	p = bytes.TrimPrefix(p, []byte("\xef\xbb\xbf"))
	p = bytes.TrimLeft(p, " \t\r\n")
	switch {
	case len(p) >= 4 && bytes.HasPrefix(p, []byte("ISA")) && !isAlnum(p[3]):
		return KindX12
	case bytes.HasPrefix(p, []byte("UNA")) || bytes.HasPrefix(p, []byte("UNB")):
		return KindEDIFACT
	case bytes.HasPrefix(p, []byte("<")) || looksLikeHeaders(p) ||
		bytes.HasPrefix(p, []byte("--")) && bytes.Contains(p, []byte("Envelope")):
		return KindAS4
	case bytes.HasPrefix(p, []byte("STX=")):
		return ""
	case edifact.FindStart(p) >= 0:
		return KindEDIFACT
	}
	return ""
}

// looksLikeHeaders reports whether p starts with an HTTP start line or a
// MIME header line and has a Content-Type header in its header block.
func looksLikeHeaders(p []byte) bool {
	head, _, _ := bytes.Cut(p, []byte("\n\n"))
	head, _, _ = bytes.Cut(head, []byte("\r\n\r\n"))
	line, _, _ := bytes.Cut(head, []byte("\n"))
	if !bytes.HasPrefix(line, []byte("HTTP/")) && !bytes.Contains(line, []byte(" HTTP/")) {
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return false
		}
	}
	return bytes.Contains(bytes.ToLower(head), []byte("content-type:"))
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
}

// unknown explains why nothing was recognised.
func unknown(p []byte) error {
	if len(bytes.TrimSpace(p)) == 0 {
		return fmt.Errorf("%w: the input is empty", ErrUnknownFormat)
	}
	head := p
	if len(head) > 24 {
		head = head[:24]
	}
	t := bytes.TrimLeft(p, " \t\r\n\xef\xbb\xbf")
	switch {
	case bytes.HasPrefix(t, []byte("STX=")):
		return fmt.Errorf("%w: TRADACOMS (STX=) is not supported", ErrUnknownFormat)
	case len(t) > 3 && isUpper(t[:3]) && (t[3] == '+' || t[3] == '*'):
		return fmt.Errorf("%w: input starts with segment %q but has no interchange envelope (no UNB or ISA in the first %d bytes)", ErrUnknownFormat, t[:3], len(p))
	}
	return fmt.Errorf("%w: no UNA/UNB (EDIFACT), ISA (X12), XML or MIME headers (AS4) in the first %d bytes, which start %q", ErrUnknownFormat, len(p), head)
}

func isUpper(b []byte) bool {
	for _, c := range b {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}
