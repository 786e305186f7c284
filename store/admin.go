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
	// ScopeStats counts per scope; rows received before expiredBefore
	// count as expired (waiting for the purge). It scans the tables.
	ScopeStats(ctx context.Context, expiredBefore time.Time) ([]ScopeStats, error)
	// ListDrift returns drift records, newest first.
	ListDrift(ctx context.Context, f ListFilter) ([]DriftRecord, error)
	// ListDeadLetters returns dead letters, newest first.
	ListDeadLetters(ctx context.Context, f ListFilter) ([]DeadLetterRecord, error)
	// Inspect returns everything stored about one key.
	Inspect(ctx context.Context, key Key) (Inspection, error)
	// Forget re-admits a key on an operator's decision: it deletes the
	// key's inbox row, attempt count and dead letter, so that the next
	// delivery is processed again, and records who did it and why in the
	// audit table. It reports whether anything was stored for the key.
	Forget(ctx context.Context, key Key, a AuditEntry) (bool, error)
	// GetDeadLetter returns one dead letter by id; ok is false if none.
	GetDeadLetter(ctx context.Context, id int64) (rec DeadLetterRecord, ok bool, err error)
	// DropDeadLetter marks a dead letter handled: it leaves the default
	// listing, and redeliveries of its message stay refused. Audited.
	DropDeadLetter(ctx context.Context, id int64, a AuditEntry) (bool, error)
}

// AuditEntry says who took an operator action and why.
type AuditEntry struct {
	Actor  string
	Reason string
}

// Inspection is everything stored about one key.
type Inspection struct {
	Key
	Inbox      *InboxRecord      // nil: not processed
	Attempts   *AttemptsRecord   // nil: no failed attempt counted
	DeadLetter *DeadLetterRecord // nil: not dead-lettered
	Drift      []DriftRecord     // newest first
}

// InboxRecord is a stored inbox row.
type InboxRecord struct {
	Source, SourcePosition, PartitionKey string
	PayloadHash                          []byte
	ReceivedAt, ProcessedAt              time.Time
	// Reply is what the handler left for duplicates (txinbox.Message.Reply,
	// Config.Replies): an HTTP key's stored response (httpinbox). Nil when
	// none was stored.
	Reply []byte
}

// AttemptsRecord is a stored attempt count.
type AttemptsRecord struct {
	Attempts                    int
	LastError                   string
	FirstFailedAt, LastFailedAt time.Time
}

// ListFilter narrows an Admin listing. Listings are newest first and
// paged by key: pass the smallest ID of a page as the next page's Before,
// so a page costs the same at any depth (no OFFSET).
type ListFilter struct {
	Scope   string // empty: all scopes
	Limit   int    // 0: 100
	Dropped bool   // ListDeadLetters: include dropped dead letters
	// Before keeps the records whose ID is below it; 0: from the newest.
	Before int64
	// Source and Reason keep the records of that source, of that reason
	// (ListDeadLetters only); empty: any.
	Source, Reason string
	// Since and Until keep the records dead-lettered (detected, for
	// drift) at or after Since and before Until; zero: no bound.
	Since, Until time.Time
	// OmitPayload leaves DeadLetterRecord.Payload empty, for listings
	// that show no payload.
	OmitPayload bool
}

// Stats counts the rows of the inbox tables.
type Stats struct {
	Inbox       int64
	Attempts    int64
	DeadLetters int64
	Drift       int64
	OldestInbox time.Time // zero when the inbox is empty
}

// ScopeStats are the counts of one scope.
type ScopeStats struct {
	Scope       string
	Inbox       int64
	Expired     int64     // inbox rows received before the cutoff
	OldestInbox time.Time // zero when the scope has no inbox row
	Attempts    int64     // messages being retried: failed attempts, neither processed nor dead-lettered
	DeadLetters int64     // not dropped
	Drift       int64
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
	DroppedAt time.Time // zero unless dropped
}

// InboxGauges are the inbox figures a metrics scrape reads.
type InboxGauges struct {
	// Rows is the number of inbox rows. On PostgreSQL a table the planner
	// estimates above GaugeExactBelow rows reports that estimate
	// (pg_class.reltuples, kept current by autovacuum) instead of
	// counting; RowsEstimated says so.
	Rows          int64
	RowsEstimated bool
	// Expired counts the rows received before the cutoff: waiting for the
	// purge. It reads the received_at index only.
	Expired int64
	// OldestReceived is the oldest row's received_at; zero when empty.
	OldestReceived time.Time
}

// GaugeExactBelow is the estimated size under which InboxGauges counts the
// PostgreSQL inbox rows exactly.
const GaugeExactBelow = 100_000

// GaugeReader is the optional interface of a driver whose inbox figures a
// metrics collector can read on every scrape: its queries use indexes and
// estimates, never a scan of the whole table.
type GaugeReader interface {
	InboxGauges(ctx context.Context, cutoff time.Time) (InboxGauges, error)
}

// MinuteCount is how many messages of one scope and source reached each
// stored outcome during one minute.
type MinuteCount struct {
	Scope, Source string
	Minute        time.Time // the minute's start, UTC
	// Processed counts inbox rows by received_at (purged rows are gone),
	// DeadLettered dead letters by dead_lettered_at, Drift drift records
	// by detected_at.
	Processed, DeadLettered, Drift int64
}

// Timeline is the optional Admin interface that counts the stored outcomes
// per minute, for the console's chart. Its queries read the rows since
// since through the tables' time indexes: the cost grows with the rows of
// that window, not with the tables.
type Timeline interface {
	OutcomesPerMinute(ctx context.Context, since time.Time) ([]MinuteCount, error)
}
