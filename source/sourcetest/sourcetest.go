// Package sourcetest is the conformance suite that every txinbox broker
// source passes: run it from the source's tests with a Harness that creates
// fresh, isolated destinations (a queue, a stream) on a real broker or an
// in-process fake.
//
// The suite checks the promises a source makes on top of the processor's:
// nothing is acked before its transaction committed, a consumer SIGKILLed
// between the commit and the ack causes a redelivery that is skipped as a
// duplicate (exactly one effect), poison is dead-lettered and acked, and a
// cut connection loses nothing. Its hostile part runs handlers that break
// their transaction (swallow a failed statement, end it, panic, let their
// own deadline close the connection) and publishes bytes the database
// cannot store as text (a NUL or invalid UTF-8 in the id, a 5 kB id, a NUL
// in a header value), each among innocent messages: every innocent message
// takes effect exactly once, the culprit is dead-lettered alone with its
// reason, and messages published after it are processed. The inbox lives
// in a real database of its own, on the store the harness names
// (Harness.Store): a PostgreSQL schema (internal/testdb, store/pgstore) or
// a MariaDB or MySQL database (internal/mysqltest, store/mysqlstore), where
// the hostile handlers are the ones that break a transaction there, each
// with what the store makes of it. The crash tests run the consumer in a
// child process: the test binary re-executed, see RunChild.
package sourcetest

import (
	"context"
	"testing"

	"github.com/txinbox/txinbox"
)

// Features declares what a broker offers, so that the suite runs only the
// tests that apply.
type Features struct {
	// Ordering: messages of one destination are delivered in publish
	// order to a single consumer.
	Ordering bool
	// ConsumerGroups: several consumers of one destination share its
	// messages, each message going to one of them.
	ConsumerGroups bool
	// Redelivery: a message delivered and not acked comes back once its
	// consumer is gone (connection closed, ack deadline passed).
	Redelivery bool
	// DeadLetterDestination: the source copies dead-lettered messages to
	// a broker destination that Broker.DeadLetters reads.
	DeadLetterDestination bool
	// ResumesAfterCommit: after a crash, the source resumes after what
	// committed in the database (a Kafka partition's watermark), so a
	// batch committed but not acked is not delivered again at all.
	ResumesAfterCommit bool
	// NULInIDs: a message id holding a NUL byte reaches the source as
	// published (the hostile-input tests send such ids).
	NULInIDs bool
	// InvalidUTF8InIDs: a message id holding invalid UTF-8 reaches the
	// source as published.
	InvalidUTF8InIDs bool
	// LongIDs: a message id of 5 kB reaches the source as published.
	LongIDs bool
	// BinaryHeaders: a header value holding a NUL reaches the source as
	// published.
	BinaryHeaders bool
}

// Message is one message the suite publishes.
type Message struct {
	// ID is the message's transport id (AMQP message_id, SQS message
	// attribute, Nats-Msg-Id); empty publishes a message without one.
	ID string
	// Body is the payload.
	Body []byte
	// Headers are the message's headers (Kafka record headers, AMQP
	// headers, NATS headers, SQS string attributes), in order.
	Headers []txinbox.Header
}

// Broker is one fresh destination of the broker under test.
type Broker interface {
	// Publish sends msgs to the destination, in order.
	Publish(ctx context.Context, msgs ...Message) error
	// Consume runs the source under test on the destination, processing
	// through the processor inbox.Processor returns, until ctx is done;
	// it returns once the source has stopped (its acks sent).
	Consume(ctx context.Context, inbox Inbox) error
	// Pending counts the messages not acked yet, delivered or not. With
	// a consumer running it may leave out what the consumer holds
	// unacked (RabbitMQ counts ready messages only); the suite's final
	// check runs with no consumer, polling until the count is reached.
	Pending(ctx context.Context) (int, error)
	// Interrupt cuts every connection the consumers have to the broker
	// (a network failure); new connections are accepted again at once.
	Interrupt()
	// DeadLetters returns the bodies of the messages in the broker's
	// dead-letter destination (Features.DeadLetterDestination only).
	DeadLetters(ctx context.Context) ([][]byte, error)
}

// Harness adapts a source to the suite.
type Harness struct {
	// Name names the broker in messages.
	Name string
	// Features declares what the broker offers.
	Features Features
	// New creates a fresh, empty destination and returns a Broker on it
	// and a description that Open accepts in a child process.
	New func(t *testing.T) (Broker, string)
	// Open opens the destination that New described, in a child
	// process.
	Open func(ctx context.Context, desc string) (Broker, error)
	// DatabaseURL is where the consumers reach the inbox's database: a
	// connection pooler's URL (PgBouncer in front of the test database,
	// say). Each test then gets a database of its own (created on the
	// test database's server, reached through the URL with its name), as
	// a pooler refuses the search_path of a schema per test. Defaults to
	// "": the test database, a schema per test. PgStore only.
	DatabaseURL string
	// Store is the store the inbox lives in: PgStore (the default),
	// PgDBStore (database/sql on PostgreSQL) or MySQLStore (a database
	// per test on MariaDB or MySQL).
	Store Store
}
