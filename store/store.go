package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Key identifies one message in an inbox: the unique key of the inbox table.
type Key struct {
	Scope     string
	MessageID string
}

// ClaimRow is one message the processor asks a transaction to claim.
type ClaimRow struct {
	Key
	Source         string
	SourcePosition string
	PartitionKey   string
	PayloadHash    []byte // SHA-256 of the payload, 32 bytes
	ReceivedAt     time.Time
}

// ClaimStatus says what a claim found for one row.
type ClaimStatus int

const (
	// ClaimNew means the row was inserted by this transaction: the message is
	// new and its side effect may run.
	ClaimNew ClaimStatus = iota + 1
	// ClaimExisting means a committed row with the same key exists;
	// ClaimResult.StoredHash holds its payload hash.
	ClaimExisting
	// ClaimDeadLettered means the key is in the dead-letter table and was
	// not inserted.
	ClaimDeadLettered
)

// ClaimResult is the answer to one ClaimRow.
type ClaimResult struct {
	Status ClaimStatus
	// StoredHash is the inbox row's payload hash for ClaimExisting, the
	// dead letter's for ClaimDeadLettered.
	StoredHash []byte
}

// DriftRow records a message whose id was already processed with another
// payload hash.
type DriftRow struct {
	Key
	Source         string
	SourcePosition string
	StoredHash     []byte
	ReceivedHash   []byte
	DetectedAt     time.Time
}

// FailureRow records one failed attempt at a message, outside the failed
// transaction, so that the count survives its rollback.
type FailureRow struct {
	Key
	Error    string
	FailedAt time.Time
	// DeadLetter carries what to store if this failure exhausts the
	// attempts (or Permanent is set).
	DeadLetter DeadLetterRow
	// Permanent dead-letters the message whatever its attempt count.
	Permanent bool
}

// DeadLetterRow is a message that will not be processed: it failed too many
// times or cannot be processed at all. Nothing is dropped silently.
type DeadLetterRow struct {
	Key            // MessageID may be empty when the message had none
	Source         string
	SourcePosition string
	PartitionKey   string
	Payload        []byte
	PayloadHash    []byte
	HeadersJSON    []byte // a JSON array of {"key":..., "value":...}
	Attempts       int
	Reason         string
	LastError      string
	ReceivedAt     time.Time
	DeadLetteredAt time.Time
}

// Driver is a database behind an inbox. TTx is the transaction type handed to
// user handlers (pgx.Tx, *sql.Tx).
type Driver[TTx any] interface {
	// Begin starts the transaction in which a batch is claimed and its side
	// effects run.
	Begin(ctx context.Context) (Tx[TTx], error)
	// RecordFailures counts one failed attempt for each row in its own short
	// transaction and dead-letters the rows whose count reaches maxAttempts
	// (or that are Permanent). Rows whose key is in the inbox by now are
	// left alone and reported Committed. It returns each row's result,
	// aligned with rows.
	RecordFailures(ctx context.Context, rows []FailureRow, maxAttempts int) ([]FailureResult, error)
	// Checkpoints returns the saved position of each partition of source
	// in scope (see Tx.SaveCheckpoint), keyed by partition number (the
	// rows' text read with ParsePartition).
	Checkpoints(ctx context.Context, scope, source string) (map[int32]int64, error)
	// IsTransient reports whether err is a database condition after which
	// the whole transaction may simply be tried again (deadlock,
	// serialization failure, a busy database file).
	IsTransient(err error) bool
}

// Refuser is the optional Driver interface that tells a database refusing
// a batch's work from a database failing. IsRefused reports whether err
// (from a batch transaction that no handler failed) is a refusal tied to
// some message of the batch: a constraint or a trigger checked at COMMIT,
// a value refused. The processor then splits the batch to find the
// message at fault. A failing database, a lost connection or a missing
// table is not a refusal.
type Refuser interface {
	IsRefused(err error) bool
}

// Pinger is the optional Driver interface that tells an outage from a
// connection closed by a message's own work. When a handler's connection
// is closed by the server or the network, the processor pings: if the
// database answers, the loss was no outage (the handler ran
// pg_terminate_backend, or a statement that crashed its backend), and the
// message is run again alone, then blamed if it loses its connection again.
// Without it, every such loss is taken for an outage.
type Pinger interface {
	// Ping reports whether the database answers one round trip.
	Ping(ctx context.Context) error
}

// Checkpoint is how far one partition of a source has been processed: a
// Kafka partition's watermark, kept in the inbox database. It is the row a
// store keeps; the processor's callers describe a partition with
// txinbox.Checkpoint.
type Checkpoint struct {
	Scope  string
	Source string
	// Partition numbers the partition within Source (a Kafka partition).
	// The row keeps it as text: see PartitionText.
	Partition int32
	Position  int64
}

// PartitionText is cp.Partition as its row keeps it. The checkpoints
// table's partition column is text (its schema predates integer
// partitions), and this is the one place that text is made; stores write
// it, and ParsePartition reads it back.
func (cp Checkpoint) PartitionText() string {
	return strconv.FormatInt(int64(cp.Partition), 10)
}

// ParsePartition reads a partition back from the text of a checkpoint row
// (PartitionText), for Driver.Checkpoints. A row whose text is no
// partition number is an error naming it: only PartitionText writes rows.
func ParsePartition(text string) (int32, error) {
	p, err := strconv.ParseInt(text, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("store: checkpoint row's partition %q is not a partition number", text)
	}
	return int32(p), nil
}

// FailureResult is the answer to one FailureRow.
type FailureResult struct {
	Attempts     int
	DeadLettered bool
	// Committed means the key is in the inbox after all: another delivery
	// of the same id committed while this one failed. No attempt is
	// counted and nothing is dead-lettered.
	Committed bool
	// Drift means Committed with another payload hash than this row's
	// (FailureRow.DeadLetter.PayloadHash): a drift row was written.
	Drift bool
}

// Tx is one open batch transaction.
type Tx[TTx any] interface {
	// Tx returns the transaction handed to user handlers.
	Tx() TTx
	// Claim inserts the rows that are neither in the inbox nor dead-lettered
	// with INSERT ... ON CONFLICT DO NOTHING and reports, aligned with rows,
	// what it found. Keys in rows are distinct. A key inserted but not yet
	// committed by another transaction makes Claim wait for it.
	Claim(ctx context.Context, rows []ClaimRow) ([]ClaimResult, error)
	// RecordDrift stores drift records in this transaction.
	RecordDrift(ctx context.Context, rows []DriftRow) error
	// DeadLetter stores messages that cannot be processed at all, in this
	// transaction.
	DeadLetter(ctx context.Context, rows []DeadLetterRow) error
	// SaveCheckpoint records in this transaction that a partition of a
	// source has been processed up to a position; a lower position than
	// the saved one is ignored.
	SaveCheckpoint(ctx context.Context, cp Checkpoint) error
	// Savepoint, RollbackToSavepoint and ReleaseSavepoint manage the one
	// savepoint the processor uses to isolate a message after a failure.
	Savepoint(ctx context.Context) error
	RollbackToSavepoint(ctx context.Context) error
	ReleaseSavepoint(ctx context.Context) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
	// Check reports, after a handler returned herr, whether the handler
	// left the transaction unusable: a *BrokenTxError, or nil; or
	// ErrCheckpointMoved when a handler's statement sent a deferred
	// checkpoint move (DeferredAdvancer) that found the checkpoint moved.
	// It costs no round trip (it reads the connection's local state).
	Check(herr error) error
}

// BrokenTxError says how a handler broke the transaction it was given.
type BrokenTxError struct {
	// Reason names what the handler did, for the dead letter.
	Reason string
	// Lost means the transaction is gone (ended, rolled back, or its
	// connection closed): everything it held is rolled back. Otherwise it
	// can still be rolled back to a savepoint.
	Lost bool
	// ConnClosed means the connection closed during the handler: the
	// handler's own context deadline, or the database went away.
	ConnClosed bool
	// DatabaseFault means the connection was lost through no fault of the
	// handler (the server or the network failed it, as the handler's
	// error says): the message is not to blame.
	DatabaseFault bool
	// Aborted means a statement failed and the transaction refuses every
	// other one until it is rolled back (to a savepoint).
	Aborted bool
}

// Error says how the handler broke its transaction.
func (e *BrokenTxError) Error() string { return "the handler broke its transaction: " + e.Reason }

// ErrTxEndByHandler is what Commit and Rollback of the transaction handed
// to a handler return, where the store can guard it: the processor alone
// ends that transaction.
var ErrTxEndByHandler = errors.New("store: a handler must not end the transaction it was given (the processor commits or rolls it back)")

// ErrClaimRace is returned by Claim when a key was neither inserted nor found
// (a concurrent purge or an operator deleted it between the two statements).
// The transaction can simply be tried again.
var ErrClaimRace = errors.New("store: key neither claimed nor found; retry the transaction")

// FailureDrift returns the drift row of a failed row whose key another
// delivery committed with the payload hash stored, and whether the hashes
// differ: for RecordFailures.
func FailureDrift(r FailureRow, stored []byte) (DriftRow, bool) {
	if bytes.Equal(stored, r.DeadLetter.PayloadHash) {
		return DriftRow{}, false
	}
	return DriftRow{
		Key: r.Key, Source: r.DeadLetter.Source, SourcePosition: r.DeadLetter.SourcePosition,
		StoredHash: stored, ReceivedHash: r.DeadLetter.PayloadHash, DetectedAt: r.FailedAt,
	}, true
}

// CheckpointAdvancer is the optional Tx interface behind offsets as the
// inbox (txinbox.Processor.ProcessOffsets): messages whose position in
// their partition is their identity (a Kafka offset) write no inbox row;
// the partition's checkpoint, moved in the same transaction as their
// effects, says which are done.
type CheckpointAdvancer interface {
	// AdvanceCheckpoint moves the checkpoint of cp's partition from
	// previous (-1: none saved yet) to cp.Position in this transaction.
	// It reports false, and changes nothing, when the saved checkpoint is
	// not previous: another consumer of the partition moved it. It locks
	// the checkpoint until the transaction ends, so that two transactions
	// of one partition run one after the other and the second finds the
	// checkpoint moved; as a transaction's first statement it arms the
	// commit guard, as Claim does.
	AdvanceCheckpoint(ctx context.Context, cp Checkpoint, previous int64) (bool, error)
}

// DeferredAdvancer is the optional Tx interface that saves a batch of
// offsets as the inbox a round trip: the checkpoint moves as part of the
// transaction's first round trip, whatever that is (a handler's first
// statement, or the commit with the statements handlers queued), instead
// of one of its own before the handlers run. Handlers may then run for a
// partition that another consumer moved on; nothing of theirs commits.
type DeferredAdvancer interface {
	// DeferAdvance is AdvanceCheckpoint deferred to the transaction's
	// first round trip, which fails with ErrCheckpointMoved (and nothing
	// commits) when the saved checkpoint is not previous. It must be
	// called before the transaction's first statement.
	DeferAdvance(cp Checkpoint, previous int64)
}

// ErrCheckpointMoved is the error of a transaction whose deferred
// checkpoint move (DeferredAdvancer) found the checkpoint elsewhere.
var ErrCheckpointMoved = errors.New("store: the partition's checkpoint moved (another consumer processed the partition)")

// EffectRow is a ClaimRow with what a declarative effect reads of its
// message.
type EffectRow struct {
	ClaimRow
	Payload []byte
	// Headers are the message's headers as the effect's statements read
	// them (Config.Effect.Headers); "" is NULL.
	Headers string
}

// EffectClaimer is the optional Tx interface of declarative effects
// (txinbox.Config.Effect): the effect's statements run in the claim's own
// statement, over the rows it inserted (where no statement can both
// insert and return rows, MySQL's, right after it in its transaction).
type EffectClaimer interface {
	// ClaimWithEffect is Claim that also runs statements over the rows it
	// inserts (none for a key it finds), in the same statement (or the
	// same transaction, before it returns).
	ClaimWithEffect(ctx context.Context, rows []EffectRow, statements []string) ([]ClaimResult, error)
}

// EffectReader is the optional Driver interface that tells whether an
// effect's statements read new_messages' payload or headers. When they do
// not, the processor does not encode the messages' headers
// (txinbox.Effect.Headers), so a header it would refuse fails nothing.
// A driver that cannot tell answers true.
type EffectReader interface {
	EffectReadsMessages(ctx context.Context, statements []string) bool
}

// EffectCommitter is the optional Driver interface that runs a
// declarative effect's claim in autocommit form: one statement, one round
// trip, committed when it returns; a statement is atomic, so the inbox
// rows, the effect and the checkpoint commit together or not at all. The
// processor uses it when nothing else must commit with them.
type EffectCommitter interface {
	// CommitEffect runs ClaimWithEffect's statement on its own. With a
	// checkpoint cp (a lower position than the saved one is ignored), the
	// statement also records, detected at detectedAt, the drift of every
	// key it finds with another payload hash, so that nothing the
	// checkpoint moves past goes unrecorded; and it commits nothing and
	// returns ErrUnanswered when it cannot answer for every key (a
	// conflicting row committed after its snapshot): the caller then
	// runs the batch in a transaction.
	CommitEffect(ctx context.Context, rows []EffectRow, statements []string, cp *Checkpoint, detectedAt time.Time) ([]ClaimResult, error)
}

// ErrUnanswered is returned by EffectCommitter.CommitEffect with a
// checkpoint when its statement could not answer for every key; nothing
// was committed.
var ErrUnanswered = errors.New("store: the claim's statement could not answer for every key; nothing committed")

// CheckpointPlanner is the optional Tx interface that saves a checkpoint
// in the transaction's first statement rather than in one of its own: the
// processor plans, before the claim, the checkpoint that the batch saves
// if every message is acked (its optimistic pass), and SaveCheckpoint of
// that same position then costs nothing.
type CheckpointPlanner interface {
	PlanCheckpoint(cp Checkpoint)
}

// StatementQueue is the optional Tx interface of a store whose handlers
// can queue statements to run with the commit, in its round trip
// (pgstore.Queue): Commit sends them first, and a failure of one is a
// *QueuedStatementError.
type StatementQueue interface {
	// FlushQueued sends the statements queued so far, now: the processor
	// calls it after each handler it runs under a savepoint, so that a
	// failing statement fails its own message. It returns a
	// *QueuedStatementError when one fails.
	FlushQueued(ctx context.Context) error
}

// QueuedStatementError is the error of Commit or FlushQueued when a
// statement a handler queued failed: the handler's failure, not the
// database's. The transaction is rolled back.
type QueuedStatementError struct {
	// Index is the statement's place among those sent together.
	Index int
	// SQL is the statement's text.
	SQL string
	Err error
}

// Error names the queued statement that failed, and its error.
func (e *QueuedStatementError) Error() string {
	sql := e.SQL
	if r := []rune(sql); len(r) > 200 {
		sql = string(r[:200]) + "…"
	}
	return fmt.Sprintf("statement %d queued by the handler failed (%s): %v", e.Index, sql, e.Err)
}

// Unwrap returns the statement's error.
func (e *QueuedStatementError) Unwrap() error { return e.Err }
