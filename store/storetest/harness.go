// Package storetest is the conformance suite that every txinbox store
// passes: run it from the store's tests with a Harness that opens fresh,
// isolated inboxes on a real database.
package storetest

import (
	"context"
	"testing"

	"github.com/txinbox/txinbox/store"
)

// Harness adapts a store to the suite.
type Harness[TTx any] struct {
	// Name names the store in messages.
	Name string
	// New returns a migrated driver on an inbox of its own (its own schema
	// or table prefix) with an empty effects table, and a string that Open
	// can use to open the same inbox from another process.
	New func(t *testing.T) (store.Driver[TTx], string)
	// Open opens the inbox that New described, in a child process.
	Open func(ctx context.Context, desc string) (store.Driver[TTx], func(), error)
	// InsertEffect writes one side-effect row for (scope, id) in tx: the
	// business write of the suite's handlers. The effects table has no
	// unique constraint, so a double execution shows.
	InsertEffect func(ctx context.Context, tx TTx, scope, id string) error
	// Effects counts the committed effect rows per "scope/id".
	Effects func(t *testing.T, d store.Driver[TTx]) map[string]int
	// InboxPayloadHash returns the stored payload hash of (scope, id), or
	// nil if the inbox has no such row.
	InboxPayloadHash func(t *testing.T, d store.Driver[TTx], scope, id string) []byte
}
