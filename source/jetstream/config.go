package jetstream

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// MsgIDHeader is the header JetStream deduplicates publishes on, and the
// default inbox key.
const MsgIDHeader = "Nats-Msg-Id"

// DeliveryCountHeader is the header the source adds to each message: how
// many times JetStream delivered it (NumDelivered).
const DeliveryCountHeader = "txinbox-delivery-count"

// KeyFunc returns the inbox message id of a delivery. An empty id makes the
// processor dead-letter the message (txinbox.ErrNoMessageID).
type KeyFunc func(m natsjs.Msg) string

// MsgIDKey keys a message on its Nats-Msg-Id header, or, when it has none,
// on "stream/sequence" (which catches redeliveries, not a publisher's
// re-send).
func MsgIDKey(m natsjs.Msg) string {
	if id := m.Headers().Get(MsgIDHeader); id != "" {
		return id
	}
	return SequenceKey(m)
}

// SequenceKey keys a message on its stream and stream sequence, e.g.
// "INVOICES/1042".
func SequenceKey(m natsjs.Msg) string {
	md, err := m.Metadata()
	if err != nil {
		return ""
	}
	return md.Stream + "/" + strconv.FormatUint(md.Sequence.Stream, 10)
}

// HeaderKey keys messages on the first value of the header name; a message
// without it has no id and is dead-lettered.
func HeaderKey(name string) KeyFunc {
	return func(m natsjs.Msg) string { return m.Headers().Get(name) }
}

// Config configures a Consumer.
type Config struct {
	// URL is the NATS server URL, or several separated by commas.
	// Required unless Conn is set.
	URL string
	// Options are extra options of the connection Run opens from URL
	// (credentials, TLS, reconnect timing). Run adds unlimited
	// reconnects before them. Defaults to none.
	Options []nats.Option
	// Conn is an open connection to use instead of URL; Run does not
	// close it. Defaults to nil.
	Conn *nats.Conn
	// Stream is the JetStream stream consumed. Required.
	Stream string
	// Consumer is the durable consumer's name; Run creates it or updates
	// its configuration. Several processes with the same Consumer share
	// the messages. Required.
	Consumer string
	// FilterSubjects narrow the consumer to these subjects. Defaults to
	// every subject of the stream.
	FilterSubjects []string
	// Key gives each message's id. Defaults to MsgIDKey.
	Key KeyFunc
	// AckWait is how long JetStream waits for an ack before it
	// redelivers. A batch in flight renews it (InProgress) every
	// AckWait/3. Defaults to 30s.
	AckWait time.Duration
	// Linger is how long to wait for more messages once a batch has its
	// first. Defaults to 5ms.
	Linger time.Duration
	// MaxDeliveries dead-letters a message delivered more often, without
	// running the handler. Defaults to 2 × the processor's MaxAttempts
	// (20).
	MaxDeliveries int
	// DeadLetterSubject, when set, receives a copy of every dead-lettered
	// message (published to JetStream after the dead letter committed,
	// before the ack), with the reason in the header "txinbox-error".
	// Defaults to "" (dead letters stay in the database only).
	DeadLetterSubject string
	// ErrorBackoff is the redelivery delay of a batch whose transaction
	// failed (database down), by consecutive failures, and the pause
	// before a broken subscription is opened again. Defaults to
	// txinbox.DefaultBackoff.
	ErrorBackoff txinbox.BackoffFunc
	// Logger logs failures and reconnects. Defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults(s txinbox.Settings) Config {
	c.common().Defaults(s, txinbox.DefaultBackoff)
	if c.Key == nil {
		c.Key = MsgIDKey
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.Linger == 0 {
		c.Linger = 5 * time.Millisecond
	}
	return c
}

func (c *Config) common() runner.Common {
	return runner.Common{MaxDeliveries: &c.MaxDeliveries, ErrorBackoff: &c.ErrorBackoff, Logger: &c.Logger}
}

func (c Config) validate(_ txinbox.Settings, v *runner.Checks) {
	v.Require(c.URL != "" || c.Conn != nil, "URL", "required unless Conn is set")
	v.Require(c.Stream != "", "Stream", "required")
	v.Require(c.Consumer != "", "Consumer", "required")
	v.Require(c.AckWait >= time.Second, "AckWait", "must be at least 1s")
	v.Require(c.Linger >= 0, "Linger", "must not be negative")
	c.common().Check(v)
}
