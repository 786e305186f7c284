// Package source is the broker seam: what a broker source (source/kafka,
// source/amqp, source/sqs, source/jetstream) offers to the service that runs
// it (package server, txinbox serve) besides consuming.
//
// Every source has Run. What a service reports about a source (is it
// connected, how many messages wait at the broker, how long can the broker
// deliver a message again) is offered through the small optional interfaces
// below, so the broker SDK calls that answer them live in the source's own
// package and a service runs any source, ours or a user's, the same way.
package source

import (
	"context"
	"time"
)

// Source consumes from a broker, hands each batch to a txinbox processor
// and acknowledges it to the broker only after its transaction committed.
type Source interface {
	// Run consumes until ctx is done, then finishes (commits and acks)
	// the batches in flight and returns nil; it returns an error when
	// the source cannot go on.
	Run(ctx context.Context) error
}

// Readier is a source that can say whether it is connected and consuming.
type Readier interface {
	// Ready returns nil when the source is connected to its broker and
	// consuming, else an error saying what it waits for.
	Ready(ctx context.Context) error
}

// Lag is how many messages wait at the broker, not yet delivered or not yet
// committed, for one partition of a source.
type Lag struct {
	// Partition names the partition ("invoices/3" for a Kafka topic's
	// partition); "" for a source that is one queue.
	Partition string
	// Messages is the number of messages waiting.
	Messages int64
}

// Lagger is a source that can read its lag from the broker.
type Lagger interface {
	// Lag reads the messages waiting at the broker.
	Lag(ctx context.Context) ([]Lag, error)
}

// Horizon is how long after a message's first delivery the broker may still
// deliver it again: a topic's retention, a queue's message retention, a
// stream's max age. An inbox must keep a message's row at least this long,
// or the late copy would be processed again.
type Horizon struct {
	// What names what the horizon is of, e.g. `Kafka topic "invoices"`.
	What string
	// Figure is the setting it was read from, as the broker names it,
	// e.g. "retention.ms=604800000 (7d)".
	Figure string
	// Within is the horizon; it is meaningless when Forever is set.
	Within time.Duration
	// Forever says the broker keeps messages without a time limit.
	Forever bool
}

// Horizoner is a source that can read its redelivery horizons from the
// broker (the retention check of txinbox serve).
type Horizoner interface {
	// RedeliveryHorizons reads the horizons of what the source consumes.
	// It returns none when the source's keys make late copies harmless
	// (Kafka offset keys are covered by the partitions' checkpoints).
	RedeliveryHorizons(ctx context.Context) ([]Horizon, error)
}
