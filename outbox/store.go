package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Store is the outbox table of one database: PostgreSQL (PostgreSQL, *PG)
// or SQLite (SQLite, *Lite). A Relay sends its rows; the methods here are
// for operators and scripts.
type Store interface {
	// Stats counts the rows by state.
	Stats(ctx context.Context) (Stats, error)
	// ListFailed returns up to limit rows that failed for good, newest
	// first.
	ListFailed(ctx context.Context, limit int) ([]FailedRow, error)
	// Replay puts the failed row id back: not failed, attempts 0, due now.
	// It reports false when no failed row has that id.
	Replay(ctx context.Context, id int64) (bool, error)
	// PurgeSent deletes up to limit rows sent before olderThan, oldest
	// first, and returns how many it deleted. Rows not sent (waiting or
	// failed) are never purged.
	PurgeSent(ctx context.Context, olderThan time.Time, limit int) (int64, error)
	// SentBefore counts the rows sent before olderThan: what PurgeSent
	// would delete, for a dry run.
	SentBefore(ctx context.Context, olderThan time.Time) (int64, error)

	// claim takes up to spec.n rows for one relay; the relay sends them
	// and hands the outcomes to the claim's finish.
	claim(ctx context.Context, spec claimSpec) (claimed, error)
}

// Stats counts the outbox rows by state.
type Stats struct {
	// Unsent is the backlog: rows neither sent nor failed, retrying ones
	// included.
	Unsent int64
	// Retrying counts the unsent rows that failed at least once.
	Retrying int64
	// OldestUnsent is when the oldest unsent row was written; zero when
	// there is none.
	OldestUnsent time.Time
	// Failed counts the rows that failed for good (the outbox's dead
	// letters), waiting for Replay.
	Failed int64
	// Sent counts the rows sent and not purged yet.
	Sent int64
}

// FailedRow is a row that failed for good.
type FailedRow struct {
	ID        int64
	Scope     string
	MessageID string
	Part      int
	Topic     string
	Key       string
	Attempts  int
	LastError string
	CreatedAt time.Time
	FailedAt  time.Time
}

// claimSpec says what one claim takes.
type claimSpec struct {
	n       int
	ordered bool
	lease   time.Duration // SQLite: how long the rows stay leased
	owner   string        // SQLite: the lease owner, unique per claim
}

// claimed is a batch of rows a relay holds: on PostgreSQL an open
// transaction with the rows locked, on SQLite a lease.
type claimed interface {
	messages() []*Message // in id order
	// finish records the outcomes (one per message, same order) and
	// releases the rows. After an error nothing of the batch is known to
	// be recorded: the rows are sent again later.
	finish(ctx context.Context, outs []outcome) error
}

type outcomeKind int

const (
	untouched     outcomeKind = iota // not sent: back to the queue as it was
	sentOK                           // confirmed by the target
	retryLater                       // failed; next attempt at next
	failedForGood                    // failed_at set
)

// outcome is what happened to one claimed row.
type outcome struct {
	kind    outcomeKind
	receipt Receipt
	err     string
	delay   time.Duration // retryLater: from now
}

// validateEntry checks the fields Add needs.
func validateEntry(e *Entry) error {
	switch {
	case e.Scope == "":
		return errors.New("outbox: Add: Entry.Scope is empty")
	case e.MessageID == "":
		return errors.New("outbox: Add: Entry.MessageID is empty")
	case e.Part < 0:
		return fmt.Errorf("outbox: Add: Entry.Part is %d, must not be negative", e.Part)
	}
	return nil
}

func validateLimit(limit int) error {
	if limit <= 0 {
		return fmt.Errorf("outbox: limit %d: must be positive", limit)
	}
	return nil
}

// newOwner returns a random id naming one relay in leases and logs.
func newOwner() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// errorText bounds the stored error text.
func errorText(err error) string {
	const maxLen = 2000
	// A text column takes neither NUL nor invalid UTF-8, and a target's
	// error may quote any bytes of a row: an outcome that cannot be
	// recorded would send the whole batch again, for ever.
	s := strings.ToValidUTF8(strings.ReplaceAll(err.Error(), "\x00", `\x00`), "\uFFFD")
	if len(s) > maxLen {
		s = strings.ToValidUTF8(s[:maxLen], "") + "…"
	}
	return s
}
