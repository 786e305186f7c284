package edi

import (
	"errors"
	"fmt"
	"github.com/txinbox/txinbox/edi/edifact"
	"strconv"
	"strings"
)

// Kind is the syntax family of a key.
type Kind string

// The kinds of key.
const (
	KindEDIFACT Kind = "edifact"
	KindX12     Kind = "x12"
	KindAS4     Kind = "as4"
)

// fieldNames are the names of the key values, in ID order, per kind.
var fieldNames = map[Kind][]string{
	KindEDIFACT: {"sender", "sender_qualifier", "recipient", "recipient_qualifier", "control_ref", "test_indicator"},
	KindX12:     {"sender_qualifier", "sender", "receiver_qualifier", "receiver", "control_number", "usage"},
	KindAS4:     {"from_party", "from_party_type", "message_id"},
}

// FieldNames returns the names of the values of a key of kind k, in the
// order of its ID, or nil for an unknown kind.
func FieldNames(k Kind) []string { return append([]string(nil), fieldNames[k]...) }

// Field is one named value of a key.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Key is the natural key of one interchange or AS4 user message.
type Key struct {
	// Kind is the syntax: KindEDIFACT, KindX12 or KindAS4.
	Kind Kind
	// ID is the key as an unambiguous string, for use as the inbox message
	// id: EncodeID(Kind, the Field values).
	ID string
	// Fields are the key values in ID order, named for display.
	Fields []Field
	// Offset is the byte offset of the envelope in the input: the UNA or
	// UNB, the ISA, or the eb:UserMessage start tag.
	Offset int64
	// Syntax is the EDIFACT syntax identifier (UNB S001/0001, e.g.
	// "UNOC"), which names the character set of the values; "" for X12
	// and AS4.
	Syntax string
}

// Text returns the Fields with their values as text, for display: for
// EDIFACT decoded from the syntax identifier's character set (UNOC as
// ISO 8859-1, ...; see edifact.DecodeText), else with invalid UTF-8
// replaced by U+FFFD. The ID is built from the exact bytes.
func (k Key) Text() []Field {
	out := make([]Field, len(k.Fields))
	for i, f := range k.Fields {
		if k.Kind == KindEDIFACT {
			f.Value = edifact.DecodeText(k.Syntax, f.Value)
		} else {
			f.Value = strings.ToValidUTF8(f.Value, "\uFFFD")
		}
		out[i] = f
	}
	return out
}

func newKey(kind Kind, offset int64, values ...string) Key {
	names := fieldNames[kind]
	fields := make([]Field, len(values))
	for i, v := range values {
		fields[i] = Field{Name: names[i], Value: v}
	}
	return Key{Kind: kind, ID: EncodeID(kind, values...), Fields: fields, Offset: offset}
}

// String returns the key in readable form, e.g.
// `edifact sender=5790000274017 sender_qualifier=14 ... control_ref=17`;
// values with spaces, '=' or unprintable characters are quoted.
func (k Key) String() string {
	var b strings.Builder
	b.WriteString(string(k.Kind))
	for _, f := range k.Fields {
		b.WriteByte(' ')
		b.WriteString(f.Name)
		b.WriteByte('=')
		if f.Value == "" || strings.ContainsAny(f.Value, " =\"") || strconv.Quote(f.Value) != `"`+f.Value+`"` {
			b.WriteString(strconv.Quote(f.Value))
		} else {
			b.WriteString(f.Value)
		}
	}
	return b.String()
}

// EncodeID returns the inbox message id of a key: the kind, ':', then the
// values joined by '|'. In each value, '%', '|' and every byte outside
// printable ASCII (space included) is written as %XX (upper-case hex); all
// other bytes are kept, so typical ids stay readable. The result is printable
// ASCII; since '|' never occurs inside an escaped value and the number of
// values is fixed per kind, different tuples give different IDs, and the
// kind prefix keeps EDIFACT, X12 and AS4 keys apart.
func EncodeID(kind Kind, values ...string) string {
	var b strings.Builder
	b.WriteString(string(kind))
	b.WriteByte(':')
	for i, v := range values {
		if i > 0 {
			b.WriteByte('|')
		}
		escapeTo(&b, v)
	}
	return b.String()
}

func escapeTo(b *strings.Builder, v string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || c == '%' || c == '|' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
}

// ErrBadID reports a string that DecodeID cannot decode.
var ErrBadID = errors.New("edi: not a key id")

// DecodeID splits an ID made by EncodeID back into its kind and values.
func DecodeID(id string) (Kind, []string, error) {
	k, rest, ok := strings.Cut(id, ":")
	kind := Kind(k)
	names, known := fieldNames[kind]
	if !ok || !known {
		return "", nil, fmt.Errorf("%w: %q has no known kind prefix", ErrBadID, id)
	}
	parts := strings.Split(rest, "|")
	if len(parts) != len(names) {
		return "", nil, fmt.Errorf("%w: %q has %d values, %s keys have %d", ErrBadID, id, len(parts), kind, len(names))
	}
	for i, p := range parts {
		v, err := unescape(p)
		if err != nil {
			return "", nil, fmt.Errorf("%w: value %d of %q: %v", ErrBadID, i+1, id, err)
		}
		parts[i] = v
	}
	return kind, parts, nil
}

func unescape(p string) (string, error) {
	if !strings.Contains(p, "%") {
		return p, nil
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			b.WriteByte(p[i])
			continue
		}
		if i+2 >= len(p) {
			return "", errors.New("truncated %-escape")
		}
		n, err := strconv.ParseUint(p[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("bad %%-escape %q", p[i:i+3])
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}
