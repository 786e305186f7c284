package txinbox

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// HandlerFunc runs the side effect of one new message inside the inbox's own
// transaction tx. If it returns an error (or panics), everything it did is
// rolled back, the message's inbox row is not kept and the outcome is Retry
// (or DeadLettered once the attempts are exhausted, or at once for a
// Permanent error). It must not end tx, nor swallow the error of a failed
// statement: a handler that does fails alone, with an error naming what it
// did (docs/concepts.md, "What a handler must not do").
type HandlerFunc[TTx any] func(ctx context.Context, tx TTx, msg *Message) error

// BatchHandlerFunc runs the side effects of all new messages of a batch at
// once, inside the inbox's transaction, so a user can write them with one
// multi-row statement. Duplicates, drift and dead letters are never passed.
// If it fails, the batch is redone calling it with one message at a time, to
// find the message at fault. With pgstore, statements whose results it does
// not need can be queued with pgstore.Queue: they travel with the COMMIT,
// one round trip less per batch.
type BatchHandlerFunc[TTx any] func(ctx context.Context, tx TTx, msgs []*Message) error

// BackoffFunc returns how long to wait before redelivering a message that
// failed attempts times (attempts >= 1).
type BackoffFunc func(attempts int) time.Duration

// Config configures a Processor. Exactly one of Handler, BatchHandler and
// Effect is required.
type Config[TTx any] struct {
	// Scope is the inbox scope of messages whose Scope is empty: the bounded
	// context or consumer group. Required.
	Scope string
	// Handler runs one message's side effect.
	Handler HandlerFunc[TTx]
	// BatchHandler runs the side effects of a batch's new messages at once.
	BatchHandler BatchHandlerFunc[TTx]
	// Effect is the side effect given as SQL instead of a handler: the
	// store runs it in the claim's own statement over the batch's new
	// messages, so that a batch is one round trip plus its COMMIT. Set
	// only one of Handler, BatchHandler and Effect. The store's
	// transactions must implement store.EffectClaimer (pgstore, mysqlstore;
	// forms: pgstore.EffectSQL, mysqlstore.EffectSQL). Defaults to nil.
	Effect *Effect
	// MaxBatchSize caps the messages per transaction; Process splits larger
	// slices. Defaults to 100; at most 5000.
	MaxBatchSize int
	// Linger is how long Submit waits for more messages before it flushes a
	// batch that is not full, when every other batch slot (Concurrency) is
	// busy; with a slot free it flushes what is waiting at once, adding no
	// wait to light traffic. Defaults to 2ms.
	Linger time.Duration
	// Concurrency is how many Submit batches may be in flight at once.
	// Defaults to 4.
	Concurrency int
	// MaxAttempts is how many failed attempts dead-letter a message.
	// Defaults to 10.
	MaxAttempts int
	// Backoff gives Result.RetryAfter. Defaults to exponential backoff from
	// 1s, doubling, capped at 5 minutes, with up to 20% jitter.
	Backoff BackoffFunc
	// Ordered, when true, makes a failure of a message turn every later
	// message of the same Process call (of every batch of it) with the
	// same PartitionKey into a Retry without running it, so effects commit
	// in order per partition key. Defaults to false.
	Ordered bool
	// TransientRetries is how many times a batch transaction is retried
	// after a transient database error (deadlock, serialization failure,
	// busy file, a connection that died before the statement reached the
	// server) before Process returns the error. Defaults to 3; -1 means
	// no retry.
	TransientRetries int
	// Hooks receive outcomes and batch statistics (see OutcomeHook,
	// BatchHook, BatchStartHook). Defaults to none.
	Hooks []Hook
	// Logger logs, at Warn, each failed attempt of a message left for a
	// retry ("txinbox: attempt failed, will be retried": scope,
	// message_id, attempt, err, and source, source_position and
	// partition_key when set), at most 10 lines per scope per minute: the
	// attempts left out are counted, and the count is logged in one line
	// ("txinbox: more failed attempts not logged") with the scope's first
	// failed attempt after that minute. At Warn too, each dead letter
	// ("txinbox: message dead-lettered", not limited); at Error, a
	// failure to record attempts; at Debug, a batch retried after a
	// transient database error. Defaults to slog.Default().
	Logger *slog.Logger
	// Now returns the current time. Defaults to time.Now; tests set it.
	Now func() time.Time
	// Replies makes the processor keep each committed message's
	// Message.Reply in its inbox row (same transaction) and return it in
	// Result.Reply of later duplicates: one statement more per batch that
	// has replies, and one per batch that has duplicates. The store's
	// transactions must implement store.ReplyKeeper. Defaults to false.
	Replies bool
	// FailFastInFlight makes a delivery of an id that another transaction
	// holds uncommitted end at once as InFlight, instead of waiting in the
	// claim for that transaction to end; the rest of its batch goes on.
	// It costs one statement per batch. Stores whose transactions do not
	// implement store.InFlightLocker wait as before (SQLite has one writer
	// at a time: a second transaction waits for the database, not for a
	// row). Both deliveries must come through processors with this set:
	// one without it still waits. Defaults to false.
	FailFastInFlight bool
}

// MaxBatchSizeLimit is the largest MaxBatchSize accepted.
const MaxBatchSizeLimit = 5000

func (c Config[TTx]) withDefaults() Config[TTx] {
	if c.MaxBatchSize == 0 {
		c.MaxBatchSize = 100
	}
	if c.Linger == 0 {
		c.Linger = 2 * time.Millisecond
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 10
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	switch c.TransientRetries {
	case 0:
		c.TransientRetries = 3
	case -1:
		c.TransientRetries = 0
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config[TTx]) validate() error {
	switch {
	case c.Scope == "":
		return &ConfigError{"Scope", "required"}
	case c.Handler == nil && c.BatchHandler == nil && c.Effect == nil:
		return &ConfigError{"Handler", "one of Handler, BatchHandler and Effect is required"}
	case c.Handler != nil && c.BatchHandler != nil, c.Effect != nil && (c.Handler != nil || c.BatchHandler != nil):
		return &ConfigError{"BatchHandler", "set only one of Handler, BatchHandler and Effect"}
	case c.Effect != nil && len(c.Effect.Statements) == 0:
		return &ConfigError{"Effect", "no statement"}
	case c.MaxBatchSize < 1 || c.MaxBatchSize > MaxBatchSizeLimit:
		return &ConfigError{"MaxBatchSize", "must be between 1 and 5000"}
	case c.Linger < 0:
		return &ConfigError{"Linger", "must not be negative"}
	case c.Concurrency < 1:
		return &ConfigError{"Concurrency", "must be at least 1"}
	case c.MaxAttempts < 1:
		return &ConfigError{"MaxAttempts", "must be at least 1"}
	case c.TransientRetries < 0:
		return &ConfigError{"TransientRetries", "must be -1 (no retry) or more"}
	}
	return nil
}

// DefaultBackoff waits 1s after the first failure, doubling up to 5 minutes,
// plus up to 20% jitter so that retries of many messages spread out.
func DefaultBackoff(attempts int) time.Duration {
	if attempts < 1 {
		attempts = 1
	}
	d := 5 * time.Minute
	if attempts <= 9 {
		d = min(time.Second<<(attempts-1), d)
	}
	return d + time.Duration(rand.Int64N(int64(d/5)+1))
}

// Effect is a side effect given as SQL (Config.Effect).
type Effect struct {
	// Statements run, each once per batch, over the batch's new messages,
	// in the claim's statement. Required.
	Statements []string
	// Headers encodes a message's headers for the statements (pgstore:
	// the jsonb column new_messages.headers); a message whose headers it
	// refuses is dead-lettered with its error, as an invalid message is.
	// It is not called when the store knows that the statements read
	// neither the payload nor the headers (store.EffectReader; pgstore
	// asks PostgreSQL for the statements' plan): their headers then fail
	// nothing. Defaults to nil: the column is NULL.
	Headers func(*Message) (string, error)
}
