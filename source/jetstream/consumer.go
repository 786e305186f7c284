package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// Consumer consumes a JetStream stream through a durable pull consumer and
// processes every message through a txinbox.Processor: exactly-once effects
// in the database, acks sent only after their batch committed.
type Consumer struct {
	cfg Config
	// base holds the processor, the delivery-count guard and the
	// counts of the batches.
	base *runner.Base
	// nc is Run's connection (Config.Conn or its own), for Ready and Lag.
	nc    atomic.Pointer[nats.Conn]
	js    natsjs.JetStream // Run's, for dead letters
	stats stats
}

// New returns a Consumer that hands its messages to proc, a processor
// built with txinbox.NewProcessor (its Scope names the inbox scope, e.g.
// the consumer). It does not connect: Run does.
func New(proc source.Processor, cfg Config) (*Consumer, error) {
	cfg, err := runner.Configure("jetstream", proc, cfg, Config.withDefaults, Config.validate)
	if err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg, base: runner.NewBase("jetstream", proc, cfg.MaxDeliveries, "delivered")}, nil
}

// Processor returns the consumer's processor.
func (c *Consumer) Processor() source.Processor { return c.base.Processor() }

// Run connects (unless Config.Conn is set), creates or updates the durable
// consumer and processes messages until ctx is done; then it flushes the
// acks sent and returns nil. A broken subscription is opened again after
// ErrorBackoff; the connection reconnects by itself. Run returns an error
// only when it cannot connect at first. Run may be called once.
func (c *Consumer) Run(ctx context.Context) error {
	if err := c.base.Start(); err != nil {
		return err
	}
	nc := c.cfg.Conn
	if nc == nil {
		opts := append([]nats.Option{nats.MaxReconnects(-1), nats.Name("txinbox " + c.cfg.Consumer)}, c.cfg.Options...)
		var err error
		if nc, err = nats.Connect(c.cfg.URL, opts...); err != nil {
			return fmt.Errorf("jetstream: connecting to %s: %w", c.cfg.URL, err)
		}
		defer nc.Close()
	}
	defer func() {
		// A connection that is down would hold Flush for its whole
		// timeout (10s) at every stop; its buffered acks are lost
		// either way and become redeliveries, found in the inbox.
		if nc.IsConnected() {
			nc.Flush() //nolint:errcheck // best effort: unsent acks become redeliveries
		}
	}()
	js, err := natsjs.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	c.js = js
	c.nc.Store(nc)
	defer c.nc.Store(nil)
	runner.Reconnect(ctx, c.cfg.ErrorBackoff, c.consume, func(_ int, err error) {
		c.cfg.Logger.WarnContext(ctx, "jetstream: subscription broken; opening it again", "stream", c.cfg.Stream,
			"consumer", c.cfg.Consumer, "err", err)
		c.stats.resubscribes.Add(1)
	})
	return nil
}

// consume opens a subscription and processes batches until ctx is done or
// the subscription breaks, and reports whether it processed any batch.
func (c *Consumer) consume(ctx context.Context) (consumed bool, err error) {
	cons, err := c.js.CreateOrUpdateConsumer(ctx, c.cfg.Stream, c.consumerConfig())
	if err != nil {
		return false, fmt.Errorf("creating consumer %s on stream %s: %w", c.cfg.Consumer, c.cfg.Stream, err)
	}
	it, err := cons.Messages(natsjs.PullMaxMessages(c.base.Batch))
	if err != nil {
		return false, err
	}
	defer it.Stop()
	// Stop ends a Next that waits for a first message.
	stopOnDone := context.AfterFunc(ctx, it.Stop)
	defer stopOnDone()
	for {
		msgs, err := c.nextBatch(ctx, it)
		if len(msgs) > 0 {
			c.handle(ctx, msgs)
			consumed = true
		}
		if err != nil {
			return consumed, err
		}
	}
}

func (c *Consumer) consumerConfig() natsjs.ConsumerConfig {
	return natsjs.ConsumerConfig{
		Durable:        c.cfg.Consumer,
		AckPolicy:      natsjs.AckExplicitPolicy,
		AckWait:        c.cfg.AckWait,
		MaxDeliver:     -1, // the source dead-letters (MaxDeliveries), with the reason stored
		MaxAckPending:  max(1000, 2*c.base.Batch),
		FilterSubjects: c.cfg.FilterSubjects,
	}
}

// nextBatch waits for a first message, then takes more for up to Linger
// until the batch is full.
func (c *Consumer) nextBatch(ctx context.Context, it natsjs.MessagesContext) ([]natsjs.Msg, error) {
	first, err := it.Next()
	if err != nil {
		return nil, err
	}
	msgs := []natsjs.Msg{first}
	deadline := time.Now().Add(c.cfg.Linger)
	for len(msgs) < c.base.Batch && ctx.Err() == nil {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		m, err := it.Next(natsjs.NextMaxWait(left))
		if errors.Is(err, nats.ErrTimeout) {
			break
		}
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// headersOf copies a message's headers, then its delivery count.
func headersOf(m natsjs.Msg, delivered uint64) []txinbox.Header {
	var hs []txinbox.Header
	for k, vs := range m.Headers() {
		for _, v := range vs {
			hs = append(hs, txinbox.Header{Key: k, Value: v})
		}
	}
	return append(hs, txinbox.Header{Key: DeliveryCountHeader, Value: fmt.Sprint(delivered)})
}

// subjectPartition is the ordering key: messages of one subject.
func subjectPartition(m natsjs.Msg) string { return strings.Clone(m.Subject()) }
