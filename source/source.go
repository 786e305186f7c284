// Package source is the broker seam: what a broker source (source/kafka,
// source/amqp, source/sqs, source/jetstream) needs of the processor it
// feeds, and what it offers to the service that runs it (package server,
// txinbox serve) besides consuming.
//
// A source takes the processor the user built (txinbox.NewProcessor, with
// the handler, scope and hooks); it is not generic over the transaction
// type, as it only hands batches to the processor through Processor.
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

	"github.com/txinbox/txinbox"
)

// Processor is what a source needs of the *txinbox.Processor the user
// built with txinbox.NewProcessor (any transaction type implements it):
// the source hands it batches, acks what it says may be acked and reports
// the acks.
type Processor interface {
	// Process is txinbox.Processor.Process.
	Process(ctx context.Context, msgs []*txinbox.Message) ([]txinbox.Result, error)
	// ProcessCheckpoint is txinbox.Processor.ProcessCheckpoint.
	ProcessCheckpoint(ctx context.Context, msgs []*txinbox.Message, cp txinbox.Checkpoint) ([]txinbox.Result, error)
	// Checkpoints is txinbox.Processor.Checkpoints.
	Checkpoints(ctx context.Context, source string) (map[int32]int64, error)
	// ReportAck is txinbox.Processor.ReportAck.
	ReportAck(ctx context.Context, info txinbox.AckInfo)
	// Settings is txinbox.Processor.Settings.
	Settings() txinbox.Settings
}

// OffsetProcessor is the optional Processor interface of offsets as the
// inbox (txinbox.Processor.ProcessOffsets; every *txinbox.Processor has
// it): a source whose messages' positions are their identity (a Kafka
// partition's offsets, kafka.OffsetWatermark) writes no inbox row, and the
// partition's checkpoint, moved in each batch transaction, says which
// messages are done. The checkpoint ProcessOffsets returns is the one the
// source passes as OffsetCheckpoint.Saved next time. Without it, such a
// source refuses to start, naming what it needs; sources keyed otherwise
// need only Processor.
type OffsetProcessor interface {
	// ProcessOffsets is txinbox.Processor.ProcessOffsets.
	ProcessOffsets(ctx context.Context, msgs []*txinbox.Message, cp txinbox.OffsetCheckpoint) ([]txinbox.Result, int64, error)
}

// Outcomes counts what became of a source's messages and batches; each
// source's Stats embeds it.
type Outcomes struct {
	// Processed, Duplicates, Drift, DeadLettered and Retries count the
	// messages by outcome (a message retried twice counts twice).
	Processed    int64
	Duplicates   int64
	Drift        int64
	DeadLettered int64
	Retries      int64
	// BatchErrors counts batch transactions that did not commit.
	BatchErrors int64
}

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
