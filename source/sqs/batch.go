package sqs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// handle processes one batch, then deletes what may be acked and sets the
// visibility timeout of the rest to their redelivery delay.
func (c *Consumer) handle(ctx context.Context, msgs []types.Message) {
	in := make([]*txinbox.Message, len(msgs))
	for i, m := range msgs {
		in[i] = c.message(m)
	}
	stop := c.keepInvisible(ctx, msgs)
	o := c.base.Process(ctx, in, c.cfg.ErrorBackoff)
	stop()
	if o.Err != nil && ctx.Err() == nil {
		c.cfg.Logger.ErrorContext(ctx, "sqs: batch not committed; its messages are received again",
			"queue", c.cfg.QueueURL, "messages", len(msgs), "failures", o.Failures, "err", o.Err)
	}
	res, failDelay := o.Results, o.FailDelay
	c.settle(ctx, msgs, in, res, failDelay)
}

// settle deletes the messages that may be acked (after sending the dead
// letters' copies) and sets the others' visibility timeout to their
// redelivery delay. It uses a context of its own: a consumer told to stop
// still deletes what committed, rather than leave it to a redelivery.
func (c *Consumer) settle(ctx context.Context, msgs []types.Message, in []*txinbox.Message, res []txinbox.Result, failDelay time.Duration) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var del []types.Message
	var later []visibility
	for i, m := range msgs {
		switch {
		case res[i].Outcome == 0:
			later = append(later, visibility{m, failDelay})
		case !res[i].Outcome.Ack():
			later = append(later, visibility{m, res[i].RetryAfter})
		case res[i].Outcome == txinbox.DeadLettered && c.cfg.DeadLetterQueueURL != "":
			if c.sendDeadLetter(sctx, m, in[i], res[i].Err) != nil {
				later = append(later, visibility{m, c.cfg.ErrorBackoff(1)})
				continue
			}
			del = append(del, m)
		default:
			del = append(del, m)
		}
	}
	c.delete(sctx, del)
	c.changeVisibility(sctx, later)
}

// visibility is a message not acked and when it is to be received again.
type visibility struct {
	msg   types.Message
	after time.Duration
}

// delete deletes msgs, ten per DeleteMessageBatch. A message not deleted
// (the request failed, a stale receipt handle) is received again after its
// visibility timeout and found in the inbox.
func (c *Consumer) delete(ctx context.Context, msgs []types.Message) {
	for start := 0; start < len(msgs); start += 10 {
		chunk := msgs[start:min(start+10, len(msgs))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		start := time.Now()
		out, err := c.cfg.Client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: &c.cfg.QueueURL, Entries: entries})
		c.reportDelete(ctx, chunk, out, start, err)
		if err != nil {
			c.stats.deleteErrors.Add(int64(len(chunk)))
			c.cfg.Logger.WarnContext(ctx, "sqs: DeleteMessageBatch failed; the messages come back as duplicates", "err", err)
			continue
		}
		c.stats.deleted.Add(int64(len(out.Successful)))
		for _, f := range out.Failed {
			c.stats.deleteErrors.Add(1)
			c.cfg.Logger.WarnContext(ctx, "sqs: a message was not deleted", "code", aws.ToString(f.Code), "err", aws.ToString(f.Message))
		}
	}
}

// reportDelete reports one DeleteMessageBatch to the inbox's AckHooks: the
// messages deleted, and apart those not deleted, or the whole chunk when
// the request failed.
func (c *Consumer) reportDelete(ctx context.Context, chunk []types.Message, out *awssqs.DeleteMessageBatchOutput, start time.Time, err error) {
	if err != nil {
		c.base.ReportAck(ctx, c.cfg.QueueURL, len(chunk), start, err)
		return
	}
	if len(out.Successful) > 0 || len(out.Failed) == 0 {
		c.base.ReportAck(ctx, c.cfg.QueueURL, len(out.Successful), start, nil)
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		c.base.ReportAck(ctx, c.cfg.QueueURL, len(out.Failed), start,
			fmt.Errorf("sqs: %d of %d messages not deleted (first: %s: %s)", len(out.Failed), len(chunk),
				aws.ToString(f.Code), aws.ToString(f.Message)))
	}
}

// changeVisibility makes the messages not acked visible again after their
// delay.
func (c *Consumer) changeVisibility(ctx context.Context, vs []visibility) {
	for start := 0; start < len(vs); start += 10 {
		chunk := vs[start:min(start+10, len(vs))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, v := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)),
				ReceiptHandle: v.msg.ReceiptHandle, VisibilityTimeout: seconds(v.after)}
		}
		if _, err := c.cfg.Client.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: &c.cfg.QueueURL, Entries: entries}); err != nil {
			// They come back when the visibility timeout asked for on
			// receive ends.
			c.cfg.Logger.DebugContext(ctx, "sqs: ChangeMessageVisibilityBatch failed", "err", err)
		}
	}
}

// keepInvisible extends the batch's visibility timeout every
// VisibilityTimeout/3 until the returned stop is called, so that a long
// batch is not received by another consumer while it runs.
func (c *Consumer) keepInvisible(ctx context.Context, msgs []types.Message) (stop func()) {
	vs := make([]visibility, len(msgs))
	for i, m := range msgs {
		vs[i] = visibility{m, c.cfg.VisibilityTimeout}
	}
	return runner.Every(c.cfg.VisibilityTimeout/3, func() {
		c.changeVisibility(ctx, vs)
		c.stats.extensions.Add(1)
	})
}

// sendDeadLetter copies a dead-lettered message to DeadLetterQueueURL.
func (c *Consumer) sendDeadLetter(ctx context.Context, m types.Message, msg *txinbox.Message, cause error) error {
	reason := "dead-lettered"
	if cause != nil {
		reason = cause.Error()
	}
	attrs := map[string]types.MessageAttributeValue{}
	for k, v := range m.MessageAttributes {
		attrs[k] = v
	}
	attrs["txinbox-error"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(reason)}
	if msg.ID != "" {
		attrs["txinbox-message-id"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(msg.ID)}
	}
	in := &awssqs.SendMessageInput{QueueUrl: &c.cfg.DeadLetterQueueURL, MessageBody: m.Body, MessageAttributes: attrs}
	if isFIFO(c.cfg.DeadLetterQueueURL) {
		in.MessageGroupId = aws.String(max(msg.PartitionKey, "txinbox"))
		in.MessageDeduplicationId = m.MessageId
	}
	if _, err := c.cfg.Client.SendMessage(ctx, in); err != nil {
		c.cfg.Logger.ErrorContext(ctx, "sqs: sending a dead letter", "queue", c.cfg.DeadLetterQueueURL, "err", err)
		return err
	}
	c.stats.deadLettersSent.Add(1)
	return nil
}
