package amqp

import (
	"context"
	"errors"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox/source"
)

// Ready returns nil while Run holds a connection and channel that consume
// the queue (see Connected).
func (c *Consumer) Ready(context.Context) error {
	if !c.Connected() {
		return errors.New("not connected")
	}
	return nil
}

// Lag returns the queue's ready messages (not those delivered and not yet
// acked), under the partition "". It reads them with a passive declare on
// a fresh channel over a connection of its own (the consumer's carries its
// deliveries; a missing queue closes only that channel): kept while Run
// runs and dialed again after a failure, dialed for the one reading
// otherwise.
func (c *Consumer) Lag(ctx context.Context) ([]source.Lag, error) {
	type answer struct {
		n   int
		err error
	}
	done := make(chan answer, 1)
	go func() {
		n, err := c.depth.read(c.cfg.URL, c.cfg.Queue)
		done <- answer{n, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		return []source.Lag{{Messages: int64(r.n)}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// depth is the connection Lag reads the queue's depth over.
type depth struct {
	mu   sync.Mutex
	conn *amqp091.Connection
	// keep is set while Run runs: the connection serves the next
	// readings too.
	keep bool
}

// read returns the ready messages of queue.
func (d *depth) read(url, queue string) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil || d.conn.IsClosed() {
		conn, err := amqp091.DialConfig(url, amqp091.Config{Dial: amqp091.DefaultDial(2 * time.Second),
			Properties: amqp091.Table{"connection_name": "txinbox: queue depth"}})
		if err != nil {
			return 0, err
		}
		d.conn = conn
	}
	if !d.keep {
		defer d.closeLocked()
	}
	ch, err := d.conn.Channel()
	if err != nil {
		d.closeLocked()
		return 0, err
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
	if err != nil {
		return 0, err
	}
	return q.Messages, nil
}

// setKeep sets whether the connection is kept; ending it closes the
// connection.
func (d *depth) setKeep(keep bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keep = keep
	if !keep {
		d.closeLocked()
	}
}

func (d *depth) closeLocked() {
	if d.conn != nil {
		d.conn.Close()
		d.conn = nil
	}
}
