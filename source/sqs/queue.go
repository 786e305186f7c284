package sqs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/source"
)

// Ready returns nil when the queue answers GetQueueAttributes: SQS is
// reachable, the credentials work and the queue exists.
func (c *Consumer) Ready(ctx context.Context) error {
	_, err := c.attribute(ctx, types.QueueAttributeNameApproximateNumberOfMessages)
	return err
}

// Lag returns the queue's ApproximateNumberOfMessages (visible, not yet
// received), under the partition "".
func (c *Consumer) Lag(ctx context.Context) ([]source.Lag, error) {
	v, err := c.attribute(ctx, types.QueueAttributeNameApproximateNumberOfMessages)
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("sqs: ApproximateNumberOfMessages %q of %s: %w", v, c.cfg.QueueURL, err)
	}
	return []source.Lag{{Messages: n}}, nil
}

// RedeliveryHorizons returns the queue's MessageRetentionPeriod: a message
// not deleted is received again until it expires.
func (c *Consumer) RedeliveryHorizons(ctx context.Context) ([]source.Horizon, error) {
	v, err := c.attribute(ctx, types.QueueAttributeNameMessageRetentionPeriod)
	if err != nil {
		return nil, fmt.Errorf("sqs: reading MessageRetentionPeriod of %s: %w", c.cfg.QueueURL, err)
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("sqs: MessageRetentionPeriod %q of %s: %w", v, c.cfg.QueueURL, err)
	}
	d := time.Duration(sec) * time.Second
	return []source.Horizon{{What: "SQS queue " + c.cfg.QueueURL, Within: d,
		Figure: "MessageRetentionPeriod=" + v + " (" + duration.Format(d) + ")"}}, nil
}

// attribute reads one attribute of the queue.
func (c *Consumer) attribute(ctx context.Context, name types.QueueAttributeName) (string, error) {
	out, err := c.cfg.Client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: &c.cfg.QueueURL,
		AttributeNames: []types.QueueAttributeName{name}})
	if err != nil {
		return "", err
	}
	return out.Attributes[string(name)], nil
}
