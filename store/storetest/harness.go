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

	// EffectStatement is a declarative effect's statement
	// (txinbox.Config.Effect) that writes the effect row InsertEffect
	// writes, for each of new_messages. Empty for a store without
	// declarative effects: DriftRuleSQLAndGoAgree then runs the Go path
	// only.
	EffectStatement string

	// The hostile handlers' tools (hostile.go); without them that part
	// of the suite is skipped.

	// Exec runs query in tx and returns its error (raw SQL: COMMIT,
	// ROLLBACK, a statement that fails).
	Exec func(ctx context.Context, tx TTx, query string) error
	// Commit and Rollback call the driver's own Commit and Rollback on tx.
	Commit   func(ctx context.Context, tx TTx) error
	Rollback func(ctx context.Context, tx TTx) error
	// SlowQuery is a statement that runs for seconds, for a handler that
	// bounds it with a short deadline of its own.
	SlowQuery string
	// WritesAfterSQLEnd says that the store cannot stop a handler that
	// ends its transaction with COMMIT or ROLLBACK as SQL and goes on
	// writing: those writes commit alone, in autocommit mode (pgdbstore
	// with Options.NoReadOnlyGuard, as behind a transaction pooler). The
	// hostile batch handlers that do so are then skipped as not
	// applicable; the ones that end the transaction and stop still run.
	WritesAfterSQLEnd bool
}
