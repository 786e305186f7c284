package amqp

import (
	"fmt"
	"log/slog"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// DeliveryCountHeader is the header the source adds to each message: how
// many times RabbitMQ delivered it, as far as it can tell (see the package
// documentation).
const DeliveryCountHeader = "txinbox-delivery-count"

// KeyFunc returns the inbox message id of a delivery, or "" when it has
// none.
type KeyFunc func(d *amqp091.Delivery) string

// MessageIDKey keys a delivery on its message_id property.
func MessageIDKey(d *amqp091.Delivery) string { return d.MessageId }

// HeaderKey keys deliveries on the header name (a string, or any value
// formatted with fmt).
func HeaderKey(name string) KeyFunc {
	return func(d *amqp091.Delivery) string {
		v, ok := d.Headers[name]
		if !ok || v == nil {
			return ""
		}
		if s, ok := v.(string); ok {
			return s
		}
		return fmt.Sprint(v)
	}
}

// Config configures a Consumer.
type Config struct {
	// URL is the broker, "amqp://user:pass@host:5672/vhost". Required.
	URL string
	// Queue is the queue consumed. Required.
	Queue string
	// Setup declares the topology (queues, exchanges, bindings) on each
	// new channel, before consuming. Defaults to nil: Queue must exist.
	Setup func(ch *amqp091.Channel) error
	// Key gives each delivery's id. Defaults to MessageIDKey.
	Key KeyFunc
	// ContentKey gives the id of a delivery that Key gives none, from its
	// content (an EDI interchange reference, say). Defaults to nil: such
	// a delivery is dead-lettered with the reason "no message id".
	ContentKey KeyFunc
	// Prefetch is the channel's prefetch count. Defaults to 2 × the
	// processor's MaxBatchSize (200), so that the next batch is on its
	// way while one commits.
	Prefetch int
	// Linger is how long to wait for more deliveries once a batch has
	// its first. Defaults to 5ms.
	Linger time.Duration
	// MaxDeliveries dead-letters a delivery whose delivery count is
	// higher, without running the handler. Only quorum queues count
	// exactly. Defaults to 2 × the processor's MaxAttempts (20).
	MaxDeliveries int
	// DeadLetterExchange, when set, receives a copy of every
	// dead-lettered message (published with a publisher confirm after
	// the dead letter committed, before the ack), with the reason in the
	// header "txinbox-error". Defaults to "" (dead letters stay in the
	// database only).
	DeadLetterExchange string
	// DeadLetterRoutingKey is the routing key of the copies. Defaults to
	// Queue.
	DeadLetterRoutingKey string
	// ErrorBackoff is how long a batch whose transaction failed is held
	// before it is requeued, and the pause before dialing again after a
	// lost connection, by consecutive failures. Defaults to exponential
	// backoff from 100ms, doubling, capped at 30s.
	ErrorBackoff txinbox.BackoffFunc
	// Heartbeat is the AMQP heartbeat interval, which detects a dead
	// connection. Defaults to 10s.
	Heartbeat time.Duration
	// Logger logs failures and reconnects. Defaults to slog.Default().
	Logger *slog.Logger
}

// DefaultErrorBackoff waits 100ms after the first failure, doubling up to
// 30s.
func DefaultErrorBackoff(failures int) time.Duration {
	if failures < 1 {
		failures = 1
	}
	if failures > 9 {
		return 30 * time.Second
	}
	return min(100*time.Millisecond<<(failures-1), 30*time.Second)
}

func (c Config) withDefaults(s txinbox.Settings) Config {
	c.common().Defaults(s, DefaultErrorBackoff)
	if c.Key == nil {
		c.Key = MessageIDKey
	}
	if c.Prefetch == 0 {
		c.Prefetch = 2 * s.MaxBatchSize
	}
	if c.Linger == 0 {
		c.Linger = 5 * time.Millisecond
	}
	if c.DeadLetterRoutingKey == "" {
		c.DeadLetterRoutingKey = c.Queue
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = 10 * time.Second
	}
	return c
}

func (c *Config) common() runner.Common {
	return runner.Common{MaxDeliveries: &c.MaxDeliveries, ErrorBackoff: &c.ErrorBackoff, Logger: &c.Logger}
}

func (c Config) validate(s txinbox.Settings, v *runner.Checks) {
	v.Require(c.URL != "", "URL", "required")
	v.Require(c.Queue != "", "Queue", "required")
	v.Require(c.Prefetch >= s.MaxBatchSize, "Prefetch", fmt.Sprintf("must be at least the processor's MaxBatchSize (%d)", s.MaxBatchSize))
	v.Require(c.Linger >= 0, "Linger", "must not be negative")
	c.common().Check(v)
	v.Require(c.Heartbeat >= time.Second, "Heartbeat", "must be at least 1s")
}
