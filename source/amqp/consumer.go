package amqp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// Consumer consumes a RabbitMQ queue with manual acks and processes every
// delivery through a txinbox.Processor: exactly-once effects in the
// database, acks sent only after their batch committed. Several Consumers
// (in one process or many) may share a queue.
type Consumer struct {
	cfg Config
	// base holds the processor, the delivery-count guard and the
	// counts of the batches.
	base *runner.Base
	// connected is true while a session consumes.
	connected atomic.Bool
	// depth is Lag's connection.
	depth depth
	stats stats
}

// New returns a Consumer that hands its deliveries to proc, a processor
// built with txinbox.NewProcessor (its Scope names the inbox scope, e.g.
// the queue). It does not connect: Run does.
func New(proc source.Processor, cfg Config) (*Consumer, error) {
	cfg, err := runner.Configure("amqp", proc, cfg, Config.withDefaults, Config.validate)
	if err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg, base: runner.NewBase("amqp", proc, cfg.MaxDeliveries, "delivered")}, nil
}

// Processor returns the consumer's processor.
func (c *Consumer) Processor() source.Processor { return c.base.Processor() }

// Connected reports whether Run holds a connection and channel that
// consume the queue (a readiness probe).
func (c *Consumer) Connected() bool { return c.connected.Load() }

// Run dials the broker, consumes and processes deliveries until ctx is
// done, then closes the connection (the broker requeues what was not
// acked) and returns nil. A lost connection or channel is dialed again
// after ErrorBackoff. Run may be called once.
func (c *Consumer) Run(ctx context.Context) error {
	if err := c.base.Start(); err != nil {
		return err
	}
	c.depth.setKeep(true)
	defer c.depth.setKeep(false)
	runner.Reconnect(ctx, c.cfg.ErrorBackoff, c.session, func(failures int, err error) {
		c.stats.reconnects.Add(1)
		c.cfg.Logger.WarnContext(ctx, "amqp: connection lost; dialing again", "queue", c.cfg.Queue,
			"failures", failures, "err", err)
	})
	return nil
}

// session is one connection and channel: deliveries are acked on the
// channel that received them, so nothing of a lost channel is acked on
// the next one.
type session struct {
	conn *amqp091.Connection
	ch   *amqp091.Channel
	// held are the deliveries waiting to be requeued (Retry, a failed
	// batch); while any is held, batches are acked one by one, since a
	// multiple-ack would ack them too.
	mu   sync.Mutex
	held map[uint64]*time.Timer
}

// session dials, consumes until the channel closes or ctx is done, and
// reports whether it processed any batch.
func (c *Consumer) session(ctx context.Context) (consumed bool, err error) {
	s, deliveries, err := c.open()
	if err != nil {
		return false, err
	}
	defer s.close()
	c.connected.Store(true)
	defer c.connected.Store(false)
	for {
		batch, open := c.nextBatch(ctx, deliveries)
		if len(batch) > 0 {
			c.handle(ctx, s, batch)
			consumed = true
		}
		if ctx.Err() != nil {
			return consumed, nil
		}
		if !open {
			return consumed, errors.New("the channel closed")
		}
	}
}

func (c *Consumer) open() (*session, <-chan amqp091.Delivery, error) {
	conn, err := amqp091.DialConfig(c.cfg.URL, amqp091.Config{Heartbeat: c.cfg.Heartbeat, Locale: "en_US",
		Dial: amqp091.DefaultDial(10 * time.Second)})
	if err != nil {
		return nil, nil, fmt.Errorf("dialing: %w", err)
	}
	s := &session{conn: conn, held: map[uint64]*time.Timer{}}
	deliveries, err := c.consume(s)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, deliveries, nil
}

func (c *Consumer) consume(s *session) (<-chan amqp091.Delivery, error) {
	var err error
	if s.ch, err = s.conn.Channel(); err != nil {
		return nil, fmt.Errorf("opening a channel: %w", err)
	}
	if err := s.ch.Qos(c.cfg.Prefetch, 0, false); err != nil {
		return nil, fmt.Errorf("setting the prefetch count: %w", err)
	}
	if c.cfg.Setup != nil {
		if err := c.cfg.Setup(s.ch); err != nil {
			return nil, fmt.Errorf("Config.Setup: %w", err)
		}
	}
	if c.cfg.DeadLetterExchange != "" {
		if err := s.ch.Confirm(false); err != nil {
			return nil, fmt.Errorf("enabling publisher confirms: %w", err)
		}
	}
	deliveries, err := s.ch.Consume(c.cfg.Queue, "", false, false, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("consuming %s: %w", c.cfg.Queue, err)
	}
	return deliveries, nil
}

// close stops the held timers and closes the connection: the broker
// requeues every delivery not acked.
func (s *session) close() {
	s.mu.Lock()
	for tag, t := range s.held {
		t.Stop()
		delete(s.held, tag)
	}
	s.mu.Unlock()
	s.conn.Close()
}

// nextBatch waits for a first delivery, then takes more for up to Linger
// until the batch is full. open is false once the channel closed.
func (c *Consumer) nextBatch(ctx context.Context, deliveries <-chan amqp091.Delivery) (batch []amqp091.Delivery, open bool) {
	select {
	case d, ok := <-deliveries:
		if !ok {
			return nil, false
		}
		batch = append(batch, d)
	case <-ctx.Done():
		return nil, true
	}
	linger := time.NewTimer(c.cfg.Linger)
	defer linger.Stop()
	for len(batch) < c.base.Batch {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return batch, false
			}
			batch = append(batch, d)
		case <-linger.C:
			return batch, true
		case <-ctx.Done():
			return batch, true
		}
	}
	return batch, true
}
