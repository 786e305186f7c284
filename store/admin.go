package store

import (
	"context"
	"time"
)

// Admin is the optional operator interface of a driver, found by type
// assertion: listing drift and dead letters, replaying, and counting.
type Admin interface {
	// Migrate applies the embedded schema migrations. It is safe to run
	// twice and from several processes at once.
	Migrate(ctx context.Context) error
	// Stats counts the rows of each inbox table.
	Stats(ctx context.Context) (Stats, error)
	// ListDrift returns drift records, newest first.
	ListDrift(ctx context.Context, f ListFilter) ([]DriftRecord, error)
	// ListDeadLetters returns dead letters, newest first.
	ListDeadLetters(ctx context.Context, f ListFilter) ([]DeadLetterRecord, error)
	// ForgetDeadLetter removes a dead letter and its attempt count so that a
	// redelivery of the message is processed again. It reports whether a
	// dead letter was found.
	ForgetDeadLetter(ctx context.Context, id int64) (bool, error)
}

// ListFilter narrows an Admin listing.
type ListFilter struct {
	Scope string // empty: all scopes
	Limit int    // 0: 100
}

// Stats counts the rows of the inbox tables.
type Stats struct {
	Inbox       int64
	Attempts    int64
	DeadLetters int64
	Drift       int64
	OldestInbox time.Time // zero when the inbox is empty
}

// DriftRecord is a stored DriftRow.
type DriftRecord struct {
	ID int64
	DriftRow
}

// DeadLetterRecord is a stored DeadLetterRow.
type DeadLetterRecord struct {
	ID int64
	DeadLetterRow
}
