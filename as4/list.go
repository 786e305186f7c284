package as4

import (
	"context"
	"time"
)

// Listed is one stored AS4 message as an operator sees it: its envelope's
// parties, service and action, and the receipt that was answered.
type Listed struct {
	Scope, Key         string
	MessageID, RefToID string
	FromParty, ToParty string
	Service, Action    string
	ConversationID     string
	SOAPVersion        string
	Parts              int
	ReceivedAt         time.Time
	Receipt            StoredReceipt
}

// ListFilter narrows a listing of stored messages, newest first.
type ListFilter struct {
	Scope string // empty: all scopes
	// Before keeps the messages received before it; zero: from the
	// newest. Pass the last ReceivedAt of a page for the next one.
	Before time.Time
	Limit  int // 0: 100
}

// Lister is the optional interface of a Store that lists what it holds,
// for the operator's console.
type Lister interface {
	ListMessages(ctx context.Context, f ListFilter) ([]Listed, error)
}
