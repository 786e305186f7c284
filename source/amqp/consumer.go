package amqp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/deliveries"
	"github.com/txinbox/txinbox/source/internal/runner"
	"github.com/txinbox/txinbox/store"
)

// Consumer consumes a RabbitMQ queue with manual acks and processes every
// delivery through a txinbox.Processor: exactly-once effects in the
// database, acks sent only after their batch committed. Several Consumers
// (in one process or many) may share a queue.
type Consumer[TTx any] struct {
	cfg  Config[TTx]
	proc *txinbox.Processor[TTx]
	// excused are the deliveries the delivery-count guard does not
	// count: those of batches that failed as a whole.
	excused *deliveries.Excuses
	running runner.Once
	// connected is true while a session consumes.
	connected atomic.Bool
	stats     stats
}

// New returns a Consumer that stores its inbox through driver. It does not
// connect: Run does.
func New[TTx any](driver store.Driver[TTx], cfg Config[TTx]) (*Consumer[TTx], error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	proc, excused, err := runner.NewProcessor("amqp", driver, &cfg.Inbox, DeliveryCountHeader, "delivered", cfg.MaxDeliveries)
	if err != nil {
		return nil, err
	}
	return &Consumer[TTx]{cfg: cfg, proc: proc, excused: excused}, nil
}

// Processor returns the consumer's processor.
func (c *Consumer[TTx]) Processor() *txinbox.Processor[TTx] { return c.proc }

// Connected reports whether Run holds a connection and channel that
// consume the queue (a readiness probe).
func (c *Consumer[TTx]) Connected() bool { return c.connected.Load() }

// Run dials the broker, consumes and processes deliveries until ctx is
// done, then closes the connection (the broker requeues what was not
// acked) and returns nil. A lost connection or channel is dialed again
// after ErrorBackoff. Run may be called once.
func (c *Consumer[TTx]) Run(ctx context.Context) error {
	if err := c.running.Start("amqp"); err != nil {
		return err
	}
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
func (c *Consumer[TTx]) session(ctx context.Context) (consumed bool, err error) {
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

func (c *Consumer[TTx]) open() (*session, <-chan amqp091.Delivery, error) {
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

func (c *Consumer[TTx]) consume(s *session) (<-chan amqp091.Delivery, error) {
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
func (c *Consumer[TTx]) nextBatch(ctx context.Context, deliveries <-chan amqp091.Delivery) (batch []amqp091.Delivery, open bool) {
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
	for len(batch) < c.cfg.Inbox.MaxBatchSize {
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
