package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
)

// Store is the outbox table of one database: PostgreSQL (outboxpg.New)
// or SQLite (outboxlite.New). A Relay sends its rows through Claim; the
// other methods are for operators and scripts.
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

	// Claim takes up to spec.N due rows (neither sent, nor failed, nor
	// waiting for their next attempt, nor held by another claim) for one
	// relay, which sends them and hands their outcomes to the batch's
	// Finish. No other claim may take a row of the batch before Finish
	// or, on a store that leases, before spec.Lease ends. An empty batch
	// means nothing is due.
	Claim(ctx context.Context, spec ClaimSpec) (Batch, error)
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

// ClaimSpec says what one Store.Claim takes.
type ClaimSpec struct {
	// N is the most rows to take. Positive.
	N int
	// Ordered takes only the head of each non-empty Key: a row none of
	// whose earlier rows of the same key is pending (waiting, retrying,
	// or held by another claim). See Config.Ordered.
	Ordered bool
	// Lease is how long a store that leases rows (SQLite) holds them for
	// this claim; a store that locks them in a transaction may ignore it.
	Lease time.Duration
	// Owner names the claim, unique per claim: a leasing store records
	// outcomes only of rows this owner still leases.
	Owner string
}

// Batch is the rows one Store.Claim took: on PostgreSQL an open
// transaction with the rows locked, on SQLite a lease.
type Batch interface {
	// Messages returns the claimed rows, in id order. A row the store
	// could not read has Message.Unreadable set.
	Messages() []*Message
	// Finish records the outcomes (one per message, in the order of
	// Messages) and releases the rows. After an error nothing of the
	// batch is known to be recorded: the rows are sent again later.
	Finish(ctx context.Context, outs []Outcome) error
}

// Outcome is what happened to one claimed row, for Batch.Finish to
// record.
type Outcome struct {
	// Result is Sent (mark the row sent, with Receipt), Retried (count
	// the attempt, record Err, next attempt after Delay) or Failed (count
	// the attempt, record Err, fail the row for good). Zero means the row
	// was not sent (the relay stopped first): it goes back to the queue as
	// it was.
	Result SendResult
	// Receipt is the target's proof of delivery, when Sent. May be nil.
	Receipt Receipt
	// Err is the error text to record, when Retried or Failed: at most
	// about 2,000 bytes of valid UTF-8 without NUL, which any text column
	// takes.
	Err string
	// Delay is the wait before the next attempt, from now, when Retried.
	Delay time.Duration
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
