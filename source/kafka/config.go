package kafka

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// Key gives the inbox message id of a record. An empty id makes the
// processor dead-letter the record (txinbox.ErrNoMessageID).
type Key interface {
	// ID returns the id of r.
	ID(r *kgo.Record) string
}

// KeyFunc is a Key written as a function.
type KeyFunc func(r *kgo.Record) string

// ID returns f(r).
func (f KeyFunc) ID(r *kgo.Record) string { return f(r) }

// OffsetKey is the natural key of a record: "topic/partition/offset", e.g.
// "invoices/3/1042". It catches redeliveries of the same record, not a
// producer's re-send of the same event at a new offset. The consumer knows
// it: records at or below their partition's watermark are acked as
// duplicates without an inbox lookup.
var OffsetKey Key = offsetKey{}

type offsetKey struct{}

func (offsetKey) ID(r *kgo.Record) string {
	return r.Topic + "/" + strconv.FormatInt(int64(r.Partition), 10) + "/" + strconv.FormatInt(r.Offset, 10)
}

// HeaderKey keys records on the value of the first header named name, e.g.
// "message-id" or the CloudEvents "ce_id", so that a producer's re-send of
// the same event at a new offset is caught as a duplicate. A record without
// the header has no id and is dead-lettered.
func HeaderKey(name string) KeyFunc {
	return func(r *kgo.Record) string {
		for _, h := range r.Headers {
			if h.Key == name {
				return string(h.Value)
			}
		}
		return ""
	}
}

// Config configures a Consumer.
type Config struct {
	// Seeds are the bootstrap brokers, "host:port". Required.
	Seeds []string
	// Topics are the topics consumed. Required.
	Topics []string
	// Group is the consumer group. Required.
	Group string
	// Key gives each record's message id. With OffsetKey, records fetched
	// again at or below their partition's watermark are acked as
	// duplicates without an inbox lookup. Defaults to OffsetKey.
	Key Key
	// MaxPollRecords caps the records taken from the client per poll, over
	// all partitions. A poll's records are processed before the next poll,
	// a partition's records in order and the partitions in parallel, so
	// taking what several brokers' fetches brought lets more partitions
	// run at once. A waiting rebalance stops the work at the next
	// transaction boundary whatever the poll's size. Defaults to 0: all
	// that the client has buffered (at most kgo.FetchMaxBytes per broker
	// fetch).
	MaxPollRecords int
	// Concurrency is how many partitions of one poll are processed at
	// once, each in its own transactions. Defaults to 4.
	Concurrency int
	// ErrorBackoff is how long a partition pauses after its batch
	// transaction failed (database down), by consecutive failures.
	// Defaults to txinbox.DefaultBackoff.
	ErrorBackoff txinbox.BackoffFunc
	// DeadLetterTopic, when set, receives a copy of every dead-lettered
	// record (after the dead letter committed, before the offset commit;
	// with OffsetWatermark before the watermark moves past it, and a
	// failed produce makes the record a Retry, copied again later),
	// with the reason in the headers "txinbox-error", "txinbox-topic",
	// "txinbox-partition" and "txinbox-offset". Defaults to "" (dead
	// letters stay in the database's dead-letter table only).
	DeadLetterTopic string
	// CommitTimeout bounds one offset commit. Defaults to 10s.
	CommitTimeout time.Duration
	// ClientOptions are extra franz-go options (TLS, SASL, session
	// timeouts), applied after the consumer's own. Options that would
	// break the guarantees (autocommit) must not be given. Defaults to
	// none.
	ClientOptions []kgo.Opt
	// Logger logs rebalances, commits and failures. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults(txinbox.Settings) Config {
	if c.Key == nil {
		c.Key = OffsetKey
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = 10 * time.Second
	}
	runner.Common{ErrorBackoff: &c.ErrorBackoff, Logger: &c.Logger}.Defaults(txinbox.Settings{}, txinbox.DefaultBackoff)
	return c
}

// validate checks c and that the processor is Ordered: a failed record
// must hold back every later record of its partition.
func (c Config) validate(s txinbox.Settings, v *runner.Checks) {
	v.Require(len(c.Seeds) > 0, "Seeds", "required")
	v.Require(len(c.Topics) > 0, "Topics", "required")
	v.Require(c.Group != "", "Group", "required")
	v.Require(c.MaxPollRecords >= 0, "MaxPollRecords", "must not be negative")
	v.Require(c.Concurrency >= 1, "Concurrency", "must be at least 1")
	v.Require(c.CommitTimeout >= 0, "CommitTimeout", "must not be negative")
	for _, t := range c.Topics {
		v.Require(t != "" && t != c.DeadLetterTopic, "Topics", fmt.Sprintf("%q is empty or the dead-letter topic", t))
	}
	v.Require(s.Ordered, "Ordered", "the processor must be built with txinbox.Config.Ordered set: "+
		"a failed record holds back every later record of its partition")
}
