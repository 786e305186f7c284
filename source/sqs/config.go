package sqs

import (
	"context"
	"log/slog"
	"strings"
	"time"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// ReceiveCountHeader is the header the source adds to each message: its
// ApproximateReceiveCount.
const ReceiveCountHeader = "txinbox-receive-count"

// Client is the part of *sqs.Client (aws-sdk-go-v2/service/sqs) the source
// uses.
type Client interface {
	ReceiveMessage(ctx context.Context, in *awssqs.ReceiveMessageInput, opts ...func(*awssqs.Options)) (*awssqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *awssqs.DeleteMessageBatchInput, opts ...func(*awssqs.Options)) (*awssqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *awssqs.ChangeMessageVisibilityBatchInput, opts ...func(*awssqs.Options)) (*awssqs.ChangeMessageVisibilityBatchOutput, error)
	SendMessage(ctx context.Context, in *awssqs.SendMessageInput, opts ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error)
	// GetQueueAttributes answers Ready, Lag and RedeliveryHorizons.
	GetQueueAttributes(ctx context.Context, in *awssqs.GetQueueAttributesInput, opts ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error)
}

// KeyFunc returns the inbox message id of a received message. An empty id
// makes the processor dead-letter the message (txinbox.ErrNoMessageID).
type KeyFunc func(m types.Message) string

// MessageIDKey keys a message on its SQS MessageId.
func MessageIDKey(m types.Message) string {
	if m.MessageId == nil {
		return ""
	}
	return *m.MessageId
}

// AttributeKey keys messages on the string value of the message attribute
// name, set by the producer, so that a re-send of the same event is caught;
// a message without it has no id and is dead-lettered.
func AttributeKey(name string) KeyFunc {
	return func(m types.Message) string {
		if a, ok := m.MessageAttributes[name]; ok && a.StringValue != nil {
			return *a.StringValue
		}
		return ""
	}
}

// DeduplicationIDKey keys messages of a FIFO queue on their
// MessageDeduplicationId, which outlives SQS's own five-minute
// deduplication window in the inbox.
func DeduplicationIDKey(m types.Message) string {
	return m.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]
}

// Config configures a Consumer.
type Config struct {
	// Client talks to SQS, e.g. sqs.NewFromConfig(awsCfg). Required.
	Client Client
	// QueueURL is the queue consumed. Required.
	QueueURL string
	// Key gives each message's id. Defaults to MessageIDKey.
	Key KeyFunc
	// WaitTime is the long-poll wait of a ReceiveMessage that starts a
	// batch, at most 20s. Defaults to 20s.
	WaitTime time.Duration
	// VisibilityTimeout is asked for on each receive; a batch in flight
	// extends it every VisibilityTimeout/3. Defaults to 30s.
	VisibilityTimeout time.Duration
	// MaxDeliveries dead-letters a message received more often (its
	// ApproximateReceiveCount), without running the handler. Defaults to
	// 2 × the processor's MaxAttempts (20).
	MaxDeliveries int
	// DeadLetterQueueURL, when set, receives a copy of every
	// dead-lettered message (sent after the dead letter committed, before
	// the delete), with the reason in the message attribute
	// "txinbox-error". Defaults to "" (dead letters stay in the database
	// only).
	DeadLetterQueueURL string
	// ErrorBackoff is the visibility timeout given to a batch whose
	// transaction failed (database down), by consecutive failures, and
	// the pause after a failed ReceiveMessage. Defaults to
	// txinbox.DefaultBackoff.
	ErrorBackoff txinbox.BackoffFunc
	// Logger logs failures. Defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults(s txinbox.Settings) Config {
	c.common().Defaults(s, txinbox.DefaultBackoff)
	if c.Key == nil {
		c.Key = MessageIDKey
	}
	if c.WaitTime == 0 {
		c.WaitTime = 20 * time.Second
	}
	if c.VisibilityTimeout == 0 {
		c.VisibilityTimeout = 30 * time.Second
	}
	return c
}

func (c *Config) common() runner.Common {
	return runner.Common{MaxDeliveries: &c.MaxDeliveries, ErrorBackoff: &c.ErrorBackoff, Logger: &c.Logger}
}

func (c Config) validate(_ txinbox.Settings, v *runner.Checks) {
	v.Require(c.Client != nil, "Client", "required")
	v.Require(c.QueueURL != "", "QueueURL", "required")
	v.Require(c.QueueURL != c.DeadLetterQueueURL, "DeadLetterQueueURL", "must not be the consumed queue")
	v.Require(c.WaitTime >= 0 && c.WaitTime <= 20*time.Second, "WaitTime", "must be between 0 and 20s")
	v.Require(c.VisibilityTimeout >= 2*time.Second && c.VisibilityTimeout <= 12*time.Hour, "VisibilityTimeout", "must be between 2s and 12h")
	c.common().Check(v)
}

// isFIFO reports whether a queue URL names a FIFO queue.
func isFIFO(queueURL string) bool { return strings.HasSuffix(queueURL, ".fifo") }
