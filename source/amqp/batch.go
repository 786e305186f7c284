package amqp

import (
	"context"
	"fmt"
	"strconv"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox"
)

// handle processes one batch and settles its deliveries: acks after the
// commit (one multiple-ack when all may be acked and nothing earlier is
// held), a held requeue for a Retry or a failed batch.
func (c *Consumer) handle(ctx context.Context, s *session, batch []amqp091.Delivery) {
	in := make([]*txinbox.Message, len(batch))
	for i := range batch {
		in[i] = c.message(&batch[i])
	}
	o := c.base.Process(ctx, in, c.cfg.ErrorBackoff)
	if o.Err != nil && ctx.Err() == nil {
		c.cfg.Logger.ErrorContext(ctx, "amqp: batch not committed; its deliveries are requeued",
			"queue", c.cfg.Queue, "messages", len(batch), "failures", o.Failures, "err", o.Err)
	}
	res, failDelay := o.Results, o.FailDelay
	if o.Err == nil && c.ackAll(ctx, s, batch, in, res) {
		return
	}
	for i := range batch {
		c.settle(ctx, s, &batch[i], in[i], res[i], failDelay)
	}
}

// ackAll acks the whole batch with one multiple-ack when every outcome may
// be acked, no dead letter is to be published and nothing is held; it
// reports whether it did.
func (c *Consumer) ackAll(ctx context.Context, s *session, batch []amqp091.Delivery, in []*txinbox.Message, res []txinbox.Result) bool {
	for _, r := range res {
		if !r.Outcome.Ack() || (r.Outcome == txinbox.DeadLettered && c.cfg.DeadLetterExchange != "") {
			return false
		}
	}
	s.mu.Lock()
	held := len(s.held)
	s.mu.Unlock()
	if held > 0 {
		return false
	}
	start := time.Now()
	err := s.ch.Ack(batch[len(batch)-1].DeliveryTag, true)
	c.base.ReportAck(ctx, c.cfg.Queue, len(batch), start, err)
	if err != nil {
		c.ackFailed(ctx, in[0], err)
		return true
	}
	c.stats.acked.Add(int64(len(batch)))
	c.stats.multipleAcks.Add(1)
	return true
}

// settle acks, dead-letters or holds one delivery after its batch.
func (c *Consumer) settle(ctx context.Context, s *session, d *amqp091.Delivery, msg *txinbox.Message, res txinbox.Result, failDelay time.Duration) {
	switch {
	case res.Outcome == 0:
		c.hold(s, d, failDelay)
		return
	case !res.Outcome.Ack():
		c.hold(s, d, res.RetryAfter)
		return
	case res.Outcome == txinbox.DeadLettered && c.cfg.DeadLetterExchange != "":
		if err := c.publishDeadLetter(ctx, s, d, msg, res.Err); err != nil {
			c.cfg.Logger.ErrorContext(ctx, "amqp: publishing a dead letter", "exchange", c.cfg.DeadLetterExchange, "err", err)
			c.hold(s, d, c.cfg.ErrorBackoff(1))
			return
		}
	}
	start := time.Now()
	err := d.Ack(false)
	c.base.ReportAck(ctx, c.cfg.Queue, 1, start, err)
	if err != nil {
		c.ackFailed(ctx, msg, err)
		return
	}
	c.stats.acked.Add(1)
}

// ackFailed notes an ack lost with its channel: the broker requeues the
// delivery, and the inbox finds it committed.
func (c *Consumer) ackFailed(ctx context.Context, msg *txinbox.Message, err error) {
	c.stats.ackErrors.Add(1)
	c.cfg.Logger.DebugContext(ctx, "amqp: ack failed; the delivery comes back as a duplicate", "id", msg.ID, "err", err)
}

// hold keeps a delivery unacked for delay, then nacks it with requeue
// (RabbitMQ has no delayed requeue). If the channel closes first, the
// broker requeues it.
func (c *Consumer) hold(s *session, d *amqp091.Delivery, delay time.Duration) {
	c.stats.requeued.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	tag := d.DeliveryTag
	s.held[tag] = time.AfterFunc(max(delay, 0), func() {
		s.mu.Lock()
		_, ok := s.held[tag]
		delete(s.held, tag)
		s.mu.Unlock()
		if ok {
			s.ch.Nack(tag, false, true) //nolint:errcheck // a closed channel requeues it too
		}
	})
}

// publishDeadLetter copies a dead-lettered delivery to DeadLetterExchange
// and waits for the broker's confirm.
func (c *Consumer) publishDeadLetter(ctx context.Context, s *session, d *amqp091.Delivery, msg *txinbox.Message, cause error) error {
	reason := "dead-lettered"
	if cause != nil {
		reason = cause.Error()
	}
	headers := amqp091.Table{}
	for k, v := range d.Headers {
		headers[k] = v
	}
	headers["txinbox-error"] = reason
	headers["txinbox-queue"] = c.cfg.Queue
	if msg.ID != "" {
		headers["txinbox-message-id"] = msg.ID
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	conf, err := s.ch.PublishWithDeferredConfirmWithContext(pctx, c.cfg.DeadLetterExchange, c.cfg.DeadLetterRoutingKey, false, false,
		amqp091.Publishing{Headers: headers, ContentType: d.ContentType, MessageId: d.MessageId, Timestamp: d.Timestamp,
			DeliveryMode: amqp091.Persistent, Body: d.Body})
	if err != nil {
		return err
	}
	ok, err := conf.WaitContext(pctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the broker nacked the dead letter")
	}
	c.stats.deadLettersPublished.Add(1)
	return nil
}

// message turns a delivery into the inbox's message.
func (c *Consumer) message(d *amqp091.Delivery) *txinbox.Message {
	id := c.cfg.Key(d)
	if id == "" && c.cfg.ContentKey != nil {
		id = c.cfg.ContentKey(d)
	}
	m := &txinbox.Message{ID: id, Source: c.cfg.Queue, PartitionKey: d.RoutingKey, Payload: d.Body}
	if !d.Timestamp.IsZero() {
		m.SourcePosition = d.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	for k, v := range d.Headers {
		m.Headers = append(m.Headers, txinbox.Header{Key: k, Value: fmt.Sprint(v)})
	}
	n := deliveryCount(d)
	m.Headers = append(m.Headers, txinbox.Header{Key: DeliveryCountHeader, Value: strconv.Itoa(n)})
	c.base.Guard(m, n)
	return m
}

// deliveryCount is the delivery's count: exact on a quorum queue
// (x-delivery-count counts the earlier deliveries), 1 or 2 ("at least")
// from the redelivered flag on a classic queue.
func deliveryCount(d *amqp091.Delivery) int {
	switch n := d.Headers["x-delivery-count"].(type) {
	case int64:
		return int(n) + 1
	case int32:
		return int(n) + 1
	case int:
		return n + 1
	}
	if d.Redelivered {
		return 2
	}
	return 1
}
