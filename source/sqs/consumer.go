package sqs

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// Consumer receives messages from an SQS queue and processes them through
// a txinbox.Processor: exactly-once effects in the database, messages
// deleted from the queue only after their batch committed. Several
// Consumers (in one process or many) may share a queue.
type Consumer struct {
	cfg Config
	// base holds the processor, the delivery-count guard and the
	// counts of the batches.
	base  *runner.Base
	stats stats
}

// New returns a Consumer that hands its messages to proc, a processor
// built with txinbox.NewProcessor (its Scope names the inbox scope).
func New(proc source.Processor, cfg Config) (*Consumer, error) {
	cfg, err := runner.Configure("sqs", proc, cfg, Config.withDefaults, Config.validate)
	if err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg, base: runner.NewBase("sqs", proc, cfg.MaxDeliveries, "received")}, nil
}

// Processor returns the consumer's processor.
func (c *Consumer) Processor() source.Processor { return c.base.Processor() }

// Run receives and processes batches until ctx is done, then returns nil.
// A failed ReceiveMessage is tried again after ErrorBackoff. Run may be
// called once.
func (c *Consumer) Run(ctx context.Context) error {
	if err := c.base.Start(); err != nil {
		return err
	}
	receiveFailures := 0
	for ctx.Err() == nil {
		msgs, err := c.receiveBatch(ctx)
		if len(msgs) > 0 {
			c.handle(ctx, msgs)
		}
		if err == nil {
			receiveFailures = 0
			continue
		}
		if ctx.Err() != nil {
			break
		}
		receiveFailures++
		c.stats.receiveErrors.Add(1)
		c.cfg.Logger.WarnContext(ctx, "sqs: ReceiveMessage failed", "queue", c.cfg.QueueURL, "failures", receiveFailures, "err", err)
		if runner.Wait(ctx, c.cfg.ErrorBackoff(receiveFailures)) != nil {
			break
		}
	}
	return nil
}

// receiveBatch long-polls for a first message, then receives without
// waiting until the batch is full or the queue has nothing visible.
func (c *Consumer) receiveBatch(ctx context.Context) ([]types.Message, error) {
	var msgs []types.Message
	wait := c.cfg.WaitTime
	for len(msgs) < c.base.Batch {
		out, err := c.cfg.Client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl:                    &c.cfg.QueueURL,
			MaxNumberOfMessages:         int32(min(10, c.base.Batch-len(msgs))),
			WaitTimeSeconds:             int32(wait / time.Second),
			VisibilityTimeout:           seconds(c.cfg.VisibilityTimeout),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, out.Messages...)
		if len(out.Messages) == 0 && len(msgs) > 0 {
			break
		}
		wait = 0
	}
	return msgs, nil
}

// seconds rounds d up to whole seconds, as SQS counts them.
func seconds(d time.Duration) int32 {
	return int32(min(math.Ceil(max(d, 0).Seconds()), 43200))
}

// message turns a received message into the inbox's message.
func (c *Consumer) message(m types.Message) *txinbox.Message {
	out := &txinbox.Message{
		ID:             c.cfg.Key(m),
		Source:         c.cfg.QueueURL,
		SourcePosition: m.Attributes[string(types.MessageSystemAttributeNameSequenceNumber)],
		PartitionKey:   m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)],
		Payload:        []byte(aws.ToString(m.Body)),
	}
	for k, a := range m.MessageAttributes {
		if a.StringValue != nil {
			out.Headers = append(out.Headers, txinbox.Header{Key: k, Value: *a.StringValue})
		}
	}
	n, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	out.Headers = append(out.Headers, txinbox.Header{Key: ReceiveCountHeader, Value: strconv.Itoa(n)})
	c.base.Guard(out, n)
	return out
}
