// Package outbox sends the rows a handler wrote to the outbox table, in the
// inbox transaction, to a target (Kafka, AMQP, HTTP, AS4), marking each row
// sent only after the target confirmed it. Every row carries a stable id, so
// the receiver's own inbox drops the copies at-least-once delivery makes.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/txinbox/txinbox"
)

// Entry is one row to add to the outbox in a handler's transaction.
type Entry struct {
	// Scope and MessageID name the inbox message that produced the row;
	// with Part they are the row's stable id. Required.
	Scope     string
	MessageID string
	Part      int
	// Source is free text describing where the row came from.
	Source string
	// Topic routes the row: a Kafka topic, an AMQP routing key, a partner
	// name for AS4. Targets say how they read it.
	Topic string
	// Key orders rows: with Config.Ordered, rows with the same Key are
	// sent one at a time in the order of creation. Also the Kafka record key.
	Key         string
	ContentType string
	// Headers are sent with the row, in order; keys may repeat. Targets
	// say how they map them (HTTP headers, Kafka record headers, AMQP
	// headers).
	Headers []Header
	Payload []byte
}

// Message is one outbox row handed to a Target.
type Message struct {
	ID          int64 // the row's id, in order of creation
	Scope       string
	MessageID   string
	Part        int
	Source      string
	Topic       string
	Key         string
	ContentType string
	Headers     []Header
	Payload     []byte
	CreatedAt   time.Time
	Attempt     int // 1 for the first try

	// Unreadable, set by the Store, is why the row could not be read (a
	// headers column that is not JSON of either form, say): the relay
	// fails the row for good without sending it, so that it does not hold
	// up the rows behind it. A Target never sees it set.
	Unreadable error
}

// StableID is the row's id across resends: "scope/message_id/part". A
// receiver deduplicates on it (HTTP Idempotency-Key, Kafka header
// txinbox-id, AMQP message-id, AS4 MessageId derived from it).
func (m *Message) StableID() string {
	return fmt.Sprintf("%s/%s/%d", m.Scope, m.MessageID, m.Part)
}

// Receipt is what a target returned as proof of delivery (an AS4 receipt
// signal, say); it is stored with the row. May be nil.
type Receipt []byte

// Target sends one message. It returns only once the receiver confirmed it
// (publisher confirm, 2xx, AS4 receipt). An error wrapped with Permanent
// fails the row at once; any other error is retried with backoff.
type Target interface {
	Send(ctx context.Context, m *Message) (Receipt, error)
}

// Permanent wraps err so that the relay fails the row without retrying.
// It is txinbox.Permanent: one permanent-error type, *txinbox.PermanentError,
// serves the inbox's handlers and the relay's targets.
func Permanent(err error) error { return txinbox.Permanent(err) }

// IsPermanent reports whether err was wrapped with Permanent (or
// txinbox.Permanent).
func IsPermanent(err error) bool {
	var p *txinbox.PermanentError
	return errors.As(err, &p)
}

// RetryAfterError asks the relay to wait at least After before the next
// attempt (an HTTP Retry-After, say). The wait is never shorter than the
// relay's own backoff.
type RetryAfterError struct {
	Err   error
	After time.Duration
}

// Error is the target's error, then how long it asked to wait.
func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.After)
}

// Unwrap returns the target's error.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err so that the relay waits at least d before the next
// attempt of the row.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &RetryAfterError{Err: err, After: d}
}

// retryAfter returns the wait an error asked for, or 0.
func retryAfter(err error) time.Duration {
	var r *RetryAfterError
	if errors.As(err, &r) && r.After > 0 {
		return r.After
	}
	return 0
}
