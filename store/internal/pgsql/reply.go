package pgsql

import (
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

// ReplyStatements are the statements of replies and in-flight locks
// (store.ReplyKeeper, store.InFlightLocker), expanded for a store's
// tables.
type ReplyStatements struct {
	// LockKeys takes, without waiting, the transaction advisory lock of
	// each key ($1 scopes, $2 ids) and returns whether it got it, in the
	// keys' order. The lock's key hashes the inbox table's name ($3) with
	// the key, so two inboxes never fence each other; a hash collision
	// can only report a key in flight that is not (it is retried).
	LockKeys string
	// SaveReplies sets the reply ($3, bytea[]) of the inbox rows of keys
	// ($1, $2) that the transaction claimed.
	SaveReplies string
	// Replies returns one row per key ($1, $2): the reply of its inbox
	// row, in the keys' order (NULL when none).
	Replies string
	// ListReplies returns, as store.ReplyRecord's columns, the newest
	// ($2 at most) inbox rows holding a reply whose scope starts with $1.
	// It reads the inbox table: an operator's page, not a hot path.
	ListReplies string
}

// NewReplyStatements expands the reply statements for t.
func NewReplyStatements(t schema.Tables) ReplyStatements {
	return ReplyStatements{
		LockKeys: `SELECT pg_try_advisory_xact_lock(hashtextextended($3::text || chr(31) || k.scope || chr(31) || k.message_id, 0))
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(scope, message_id, ord)
ORDER BY k.ord`,
		SaveReplies: t.Expand(`UPDATE {inbox} AS i SET reply = r.reply
FROM unnest($1::text[], $2::text[], $3::bytea[]) AS r(scope, message_id, reply)
WHERE i.scope = r.scope AND i.message_id = r.message_id`),
		Replies: t.Expand(`SELECT i.reply
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(scope, message_id, ord)
LEFT JOIN {inbox} AS i ON i.scope = k.scope AND i.message_id = k.message_id
ORDER BY k.ord`),
		ListReplies: t.Expand(`SELECT scope, message_id, source, received_at, reply FROM {inbox}
WHERE left(scope, length($1)) = $1 AND reply IS NOT NULL ORDER BY received_at DESC LIMIT $2`),
	}
}

// KeyColumns splits keys into the scope and message id arrays the reply
// statements take.
func KeyColumns(keys []store.Key) (scopes, ids []string) {
	scopes, ids = make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		scopes[i], ids[i] = k.Scope, k.MessageID
	}
	return scopes, ids
}
