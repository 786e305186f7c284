package console

import (
	"context"
	"errors"
	"time"
)

// AS4Lister lists the stored AS4 messages with their receipts, newest
// first, for the AS4 page. as4view.Lister adapts an as4.Lister (as4pg,
// as4sqlite, as4my).
type AS4Lister interface {
	ListAS4(ctx context.Context, f AS4Filter) ([]AS4Message, error)
}

// AS4Filter narrows a listing of stored AS4 messages, newest first.
type AS4Filter struct {
	// Scope keeps one scope's messages; empty: all scopes.
	Scope string
	// Before keeps the messages received before it; zero: from the
	// newest. The console passes the last ReceivedAt of a page.
	Before time.Time
	// Limit caps the messages returned.
	Limit int
}

// AS4Message is one stored AS4 message as an operator sees it: its
// envelope's parties, service and action, and the receipt answered.
type AS4Message struct {
	Scope, Key         string
	MessageID, RefToID string
	FromParty, ToParty string
	Service, Action    string
	ConversationID     string
	SOAPVersion        string
	Parts              int
	ReceivedAt         time.Time
	Receipt            AS4Receipt
}

// AS4Receipt is the receipt answered to a stored AS4 message.
type AS4Receipt struct {
	MessageID   string
	ContentType string
	Body        []byte
}

// EDIReader returns the EDI interchanges (EDIFACT, X12) and AS4 user
// messages of a stored payload with their inbox keys, for the dead letter
// and inspect pages; ErrNotEDI (wrapped or not) when the payload is none
// of them. ediview.Read is one, over package edi.
type EDIReader func(payload []byte) ([]EDIKey, error)

// ErrNotEDI is what an EDIReader returns for a payload in no format it
// reads.
var ErrNotEDI = errors.New("not EDIFACT, X12 or AS4")

// EDIKey is one interchange or AS4 user message found in a payload.
type EDIKey struct {
	// Kind is the format: "edifact", "x12" or "as4".
	Kind string
	// ID is the inbox key.
	ID string
	// Fields are the envelope fields the key is made of, as text.
	Fields []EDIField
	// Offset is where the interchange starts in the payload.
	Offset int64
	// Charset names an EDIFACT syntax's character set; empty otherwise.
	Charset string
}

// EDIField is one envelope field of an EDIKey.
type EDIField struct {
	Name, Value string
}
