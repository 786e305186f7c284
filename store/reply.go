package store

import (
	"context"
	"time"
)

// ReplyRow is what a committed message's handler left for later
// duplicates (txinbox.Message.Reply), kept in the message's inbox row.
type ReplyRow struct {
	Key
	Reply []byte
}

// ReplyKeeper is the optional Tx interface behind txinbox.Config.Replies:
// a handler's reply is kept in its message's inbox row, written in the
// batch's transaction, and read back for a duplicate.
type ReplyKeeper interface {
	// SaveReplies stores each row's reply in the inbox row of its key,
	// which this transaction claimed.
	SaveReplies(ctx context.Context, rows []ReplyRow) error
	// Replies returns the stored reply of each key, aligned with keys:
	// nil for a key whose row holds none (or that has no row).
	Replies(ctx context.Context, keys []Key) ([][]byte, error)
}

// InFlightLocker is the optional Tx interface behind
// txinbox.Config.FailFastInFlight: before the claim, the processor takes
// a lock per key for the rest of the transaction, without waiting; a key
// whose lock another transaction holds is in flight there, and is not
// claimed (the claim would wait on the unique index for that transaction
// to end).
type InFlightLocker interface {
	// TryLockKeys takes, without waiting, a lock held until this
	// transaction ends on each key, and reports, aligned with keys,
	// whether it got it.
	TryLockKeys(ctx context.Context, keys []Key) ([]bool, error)
}

// ReplyRecord is an inbox row that holds a reply: with httpinbox, an HTTP
// key and its stored response.
type ReplyRecord struct {
	Key
	Source     string
	ReceivedAt time.Time
	Reply      []byte
}

// ReplyLister is the optional Admin interface behind the console's page
// of HTTP keys.
type ReplyLister interface {
	// ListReplies returns the inbox rows that hold a reply, of the scopes
	// that start with scopePrefix, newest first (received_at), at most
	// limit.
	ListReplies(ctx context.Context, scopePrefix string, limit int) ([]ReplyRecord, error)
}
