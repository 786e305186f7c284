// Package effect is the side effect of a message given without Go, as
// txinbox serve's --effect outbox|sql runs it, for Go programs too: each
// new message copied to the outbox table, or SQL statements, run in the
// message's inbox transaction.
//
// A Spec says what runs; New binds it to a store, Check prepares its
// statements at start, and Apply gives a txinbox.Config the effect: joined
// to the claim's statement (txinbox.Config.Effect: one round trip per
// batch) when the store can (store.EffectChecker), else a handler per
// message. Statements run with the store's typed parameters
// (store.StatementRunner), or with database/sql when the store's
// transactions are *sql.Tx.
//
// The package links no database driver, broker or AS4 code: the AS4
// endpoint's effect is as4/as4effect's.
package effect

import (
	"errors"
	"fmt"

	"github.com/txinbox/txinbox/store"
)

// Mode says what an effect does for each new message.
type Mode string

// The modes of an effect.
const (
	// None runs nothing: the inbox row (and the AS4 tables) is the whole
	// effect.
	None Mode = "none"
	// Outbox copies each payload to the outbox table (Spec.OutboxTable).
	Outbox Mode = "outbox"
	// SQL runs Spec.Statements.
	SQL Mode = "sql"
)

// Params documents the parameters bound to the per-message statements of
// SQL. A statement receives $1 up to the highest it names, typed ($1-$8
// text, $9 bytea, $10 timestamptz, declared on PostgreSQL), so that it
// may skip some ($1, $2, $7) and cast others ($7::bigint). The brokers
// keep $1, $2, $9 and $10 where AS4 has them and text in between, so
// that one statement can serve every source.
const Params = "AS4: $1 scope, $2 inbox key, $3 ebMS MessageId, $4 From PartyId, $5 To PartyId, $6 Service, " +
	"$7 Action, $8 ConversationId, $9 first payload (bytes, or NULL), $10 received_at; " +
	"brokers: $1 scope, $2 inbox key, $3 message id, $4 source (kafka, amqp, sqs, nats), $5 topic, queue or stream, " +
	"$6 partition key, $7 position, $8 headers (JSON), $9 payload, $10 received_at"

// MaxParams is how many parameters Params documents.
const MaxParams = 10

// Spec is an effect without Go. Its errors name serve's flags: Mode is
// --effect, Statements --effect-sql.
type Spec struct {
	// Mode is None, Outbox or SQL. Required.
	Mode Mode
	// Statements are SQL's statements, each run in the message's
	// transaction: per message, with the parameters of Params; or, when
	// every one reads new_messages and names no $N (SetBased), once per
	// batch in the claim's statement over its new messages
	// (pgstore.EffectSQL). Required with SQL, refused otherwise.
	Statements []string
	// OutboxTable is the quoted name of the outbox table that Outbox
	// writes (the store's Tables().Outbox). Required with Outbox.
	OutboxTable string
	// OutboxHeaders says that the outbox table has a headers column (a
	// later migration), which Outbox then fills with the message's
	// headers (outbox.EncodeHeaders; NULL for none). Defaults to false.
	OutboxHeaders bool
	// MySQL says that the store is MySQL or MariaDB (mysqlstore): the
	// outbox's declarative statement then reads the content type from
	// new_messages.headers with MySQL's JSON_TABLE rather than
	// PostgreSQL's jsonb functions. Defaults to false.
	MySQL bool
}

// Validate checks the spec without a database (New also checks that
// Outbox has an OutboxTable).
func (s Spec) Validate() error {
	switch s.Mode {
	case None, Outbox:
		if len(s.Statements) > 0 {
			return fmt.Errorf("--effect-sql needs --effect sql (it is %s)", s.Mode)
		}
	case SQL:
		if len(s.Statements) == 0 {
			return fmt.Errorf("--effect sql needs at least one --effect-sql statement (parameters: %s)", Params)
		}
		for i, st := range s.Statements {
			if n := store.InspectStatement(st).MaxParam; n > MaxParams {
				return fmt.Errorf("--effect-sql statement %d names $%d: the parameters are $1 to $%d (%s)", i+1, n, MaxParams, Params)
			}
		}
	default:
		return fmt.Errorf("--effect %q: use none, outbox or sql", s.Mode)
	}
	return nil
}

// SetBased reports whether the spec's statements are all set-based
// (store.Statement.SetBased): they read the batch's new messages from
// new_messages, so they run only joined to the claim, once per batch.
func (s Spec) SetBased() bool {
	for _, st := range s.Statements {
		if !store.InspectStatement(st).SetBased() {
			return false
		}
	}
	return len(s.Statements) > 0
}

// ErrNotJoined is the error of Check for set-based statements (SetBased)
// on a store that cannot join them to the claim.
var ErrNotJoined = errors.New("--effect-sql statements that read new_messages need PostgreSQL with an unpartitioned inbox, MySQL or MariaDB")
