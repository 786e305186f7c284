package jetstream

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// handle processes one batch and settles each message: ack after the
// commit for what may be acked, a delayed nak for a Retry or for a batch
// whose transaction failed.
func (c *Consumer) handle(ctx context.Context, msgs []natsjs.Msg) {
	in := make([]*txinbox.Message, len(msgs))
	for i, m := range msgs {
		in[i] = c.message(m)
	}
	stop := c.keepAlive(msgs)
	o := c.base.Process(ctx, in, c.cfg.ErrorBackoff)
	stop()
	if o.Err != nil && ctx.Err() == nil {
		c.cfg.Logger.ErrorContext(ctx, "jetstream: batch not committed; its messages are redelivered",
			"stream", c.cfg.Stream, "messages", len(msgs), "failures", o.Failures, "err", o.Err)
	}
	res, failDelay := o.Results, o.FailDelay
	for i, m := range msgs {
		c.settle(ctx, m, in[i], res[i], failDelay)
	}
}

// settle acks, dead-letters or naks one message after its batch.
func (c *Consumer) settle(ctx context.Context, m natsjs.Msg, msg *txinbox.Message, res txinbox.Result, failDelay time.Duration) {
	var err error
	switch {
	case res.Outcome == 0:
		err = m.NakWithDelay(failDelay)
	case !res.Outcome.Ack():
		err = m.NakWithDelay(max(res.RetryAfter, 0))
	case res.Outcome == txinbox.DeadLettered && c.cfg.DeadLetterSubject != "":
		if err = c.publishDeadLetter(ctx, m, msg, res.Err); err != nil {
			err = m.NakWithDelay(c.cfg.ErrorBackoff(1))
		} else {
			err = c.ack(ctx, m)
		}
	default:
		err = c.ack(ctx, m)
	}
	if err != nil {
		// The connection is down: the message is redelivered after
		// AckWait and found in the inbox.
		c.stats.ackErrors.Add(1)
		c.cfg.Logger.DebugContext(ctx, "jetstream: settling a message failed", "id", msg.ID, "err", err)
	} else if res.Outcome.Ack() {
		c.stats.acked.Add(1)
	}
}

// ack acks one message and reports it to the inbox's AckHooks.
func (c *Consumer) ack(ctx context.Context, m natsjs.Msg) error {
	start := time.Now()
	err := m.Ack()
	c.base.ReportAck(ctx, c.cfg.Stream, 1, start, err)
	return err
}

// publishDeadLetter copies a dead-lettered message to DeadLetterSubject and
// waits for JetStream to store it.
func (c *Consumer) publishDeadLetter(ctx context.Context, m natsjs.Msg, msg *txinbox.Message, cause error) error {
	reason := "dead-lettered"
	if cause != nil {
		reason = cause.Error()
	}
	out := nats.NewMsg(c.cfg.DeadLetterSubject)
	out.Data = m.Data()
	for k, vs := range m.Headers() {
		if k != MsgIDHeader { // a copy must not be deduplicated against the original
			out.Header[k] = vs
		}
	}
	out.Header.Set("txinbox-error", reason)
	out.Header.Set("txinbox-message-id", msg.ID)
	out.Header.Set("txinbox-subject", m.Subject())
	if _, err := c.js.PublishMsg(ctx, out); err != nil {
		c.cfg.Logger.ErrorContext(ctx, "jetstream: publishing a dead letter", "subject", c.cfg.DeadLetterSubject, "err", err)
		return err
	}
	c.stats.deadLettersPublished.Add(1)
	return nil
}

// message turns a delivery into the inbox's message.
func (c *Consumer) message(m natsjs.Msg) *txinbox.Message {
	var delivered uint64
	pos := ""
	if md, err := m.Metadata(); err == nil {
		delivered = md.NumDelivered
		pos = strconv.FormatUint(md.Sequence.Stream, 10)
	}
	out := &txinbox.Message{
		ID:             c.cfg.Key(m),
		Source:         c.cfg.Stream,
		SourcePosition: pos,
		PartitionKey:   subjectPartition(m),
		Payload:        m.Data(),
		Headers:        headersOf(m, delivered),
	}
	c.base.Guard(out, int(min(delivered, math.MaxInt32)))
	return out
}

// keepAlive tells JetStream every AckWait/3 that the batch's messages are
// still being worked on, until the returned stop is called.
func (c *Consumer) keepAlive(msgs []natsjs.Msg) (stop func()) {
	return runner.Every(c.cfg.AckWait/3, func() {
		for _, m := range msgs {
			m.InProgress() //nolint:errcheck // a lost renewal costs a redelivery at worst
		}
		c.stats.inProgress.Add(int64(len(msgs)))
	})
}
