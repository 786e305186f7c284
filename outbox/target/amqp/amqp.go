// Package amqp is an outbox target that publishes each row to RabbitMQ
// (AMQP 0-9-1, amqp091-go) with publisher confirms: Send returns only once
// the broker confirmed the message. Messages are persistent and mandatory:
// a nack, or a message the broker returns as unroutable, is an error (the
// relay retries it). The message-id property is the row's stable id, for
// the consumer to deduplicate on.
//
// Each send uses a channel of its own from a small pool, with at most one
// unconfirmed message, so a basic.return always belongs to the message
// just published. A closed channel or connection is replaced on the next
// send.
package amqp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox/outbox"
)

// Config configures a Target.
type Config struct {
	// URL is the broker, amqp://user:pass@host:port/vhost. Required.
	URL string
	// Exchange receives the messages. Defaults to "" (the default
	// exchange: the routing key names a queue).
	Exchange string
	// RoutingKey is the routing key of rows whose Topic is empty; a row's
	// Topic is its routing key. Defaults to none: such rows fail for good.
	RoutingKey string
	// Channels is how many channels are kept open for concurrent sends.
	// Defaults to 4 (match the relay's Concurrency).
	Channels int
	// DialTimeout bounds connecting. Defaults to 10s.
	DialTimeout time.Duration
}

// Target publishes outbox rows. It is safe for concurrent use.
type Target struct {
	cfg  Config
	pool chan *pubChannel

	mu     sync.Mutex
	conn   *amqp091.Connection
	closed bool
}

var _ outbox.Target = (*Target)(nil)

// pubChannel is a channel in confirm mode with its own return listener.
type pubChannel struct {
	ch      *amqp091.Channel
	returns chan amqp091.Return
}

// New returns a Target for cfg. It connects on the first Send.
func New(cfg Config) (*Target, error) {
	if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") {
		return nil, errors.New("outbox amqp target: Config.URL: want an amqp:// or amqps:// URL")
	}
	if cfg.Channels < 0 {
		return nil, fmt.Errorf("outbox amqp target: Config.Channels %d must not be negative", cfg.Channels)
	}
	if cfg.Channels == 0 {
		cfg.Channels = 4
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	return &Target{cfg: cfg, pool: make(chan *pubChannel, cfg.Channels)}, nil
}

// Send publishes m and waits for the broker's confirm.
func (t *Target) Send(ctx context.Context, m *outbox.Message) (outbox.Receipt, error) {
	key := m.Topic
	if key == "" {
		key = t.cfg.RoutingKey
	}
	if key == "" && t.cfg.Exchange == "" {
		return nil, outbox.Permanent(fmt.Errorf("row %d has no topic and the amqp target has no default (Config.RoutingKey)", m.ID))
	}
	pc, err := t.channel()
	if err != nil {
		return nil, err
	}
	headers := amqp091.Table{}
	for _, h := range m.Headers {
		if _, dup := headers[h.Key]; !dup { // a table has one value per key: the first
			headers[h.Key] = h.Value
		}
	}
	pub := amqp091.Publishing{Headers: headers, ContentType: m.ContentType, DeliveryMode: amqp091.Persistent,
		MessageId: m.StableID(), Timestamp: m.CreatedAt, Body: m.Payload}
	dc, err := pc.ch.PublishWithDeferredConfirmWithContext(ctx, t.cfg.Exchange, key, true, false, pub)
	if err != nil {
		pc.ch.Close() //nolint:errcheck // replaced on the next send
		return nil, fmt.Errorf("publishing to exchange %q, routing key %q: %w", t.cfg.Exchange, key, err)
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		// A confirm still outstanding would be taken for the next
		// message's: drop the channel.
		pc.ch.Close() //nolint:errcheck // replaced on the next send
		return nil, fmt.Errorf("waiting for the confirm: %w", err)
	}
	// The broker sends basic.return before the ack, and the client
	// hands it to the listener (buffered) before it resolves the ack.
	var ret *amqp091.Return
	select {
	case r := <-pc.returns:
		ret = &r
	default:
	}
	switch {
	case !acked && pc.ch.IsClosed():
		return nil, fmt.Errorf("channel closed before the confirm of message %s", m.StableID())
	case !acked:
		t.put(pc)
		return nil, fmt.Errorf("broker nacked message %s", m.StableID())
	case ret != nil:
		t.put(pc)
		return nil, fmt.Errorf("message %s unroutable: exchange %q, routing key %q: %d %s",
			m.StableID(), t.cfg.Exchange, key, ret.ReplyCode, ret.ReplyText)
	}
	t.put(pc)
	return nil, nil
}

// channel takes a pooled channel or opens one, reconnecting if needed.
func (t *Target) channel() (*pubChannel, error) {
	for {
		select {
		case pc := <-t.pool:
			if !pc.ch.IsClosed() {
				return pc, nil
			}
			continue
		default:
		}
		break
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errors.New("outbox amqp target: closed")
	}
	if t.conn == nil || t.conn.IsClosed() {
		conn, err := amqp091.DialConfig(t.cfg.URL, amqp091.Config{Dial: amqp091.DefaultDial(t.cfg.DialTimeout)})
		if err != nil {
			return nil, fmt.Errorf("connecting to RabbitMQ: %w", err)
		}
		t.conn = conn
	}
	ch, err := t.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("opening a channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		ch.Close() //nolint:errcheck // failed anyway
		return nil, fmt.Errorf("confirm mode: %w", err)
	}
	return &pubChannel{ch: ch, returns: ch.NotifyReturn(make(chan amqp091.Return, 1))}, nil
}

// put returns a channel to the pool, or closes it when the pool is full.
func (t *Target) put(pc *pubChannel) {
	select {
	case t.pool <- pc:
	default:
		pc.ch.Close() //nolint:errcheck // surplus
	}
}

// Close closes the connection; sends after Close fail.
func (t *Target) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.conn == nil {
		return nil
	}
	return t.conn.Close()
}
