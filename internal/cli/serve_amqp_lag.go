package cli

import (
	"context"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// amqpDepth reads a RabbitMQ queue's ready messages for txinbox_source_lag
// over a connection of its own (the consumer's carries its deliveries), with
// a passive declare on a fresh channel per reading: a missing queue closes
// only that channel. A failed connection is dialled again at the next scrape.
type amqpDepth struct {
	url, queue string

	mu   sync.Mutex
	conn *amqp091.Connection
}

// lag returns the queue's ready messages (not those delivered and unacked)
// under the partition label "".
func (a *amqpDepth) lag(ctx context.Context) (map[string]int64, error) {
	type answer struct {
		n   int
		err error
	}
	done := make(chan answer, 1)
	go func() {
		n, err := a.read()
		done <- answer{n, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		return map[string]int64{"": int64(r.n)}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *amqpDepth) read() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == nil || a.conn.IsClosed() {
		conn, err := amqp091.DialConfig(a.url, amqp091.Config{Dial: amqp091.DefaultDial(2 * time.Second),
			Properties: amqp091.Table{"connection_name": "txinbox serve: queue depth"}})
		if err != nil {
			return 0, err
		}
		a.conn = conn
	}
	ch, err := a.conn.Channel()
	if err != nil {
		a.conn.Close()
		a.conn = nil
		return 0, err
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(a.queue, false, false, false, false, nil)
	if err != nil {
		return 0, err
	}
	return q.Messages, nil
}

// close ends the connection, if any.
func (a *amqpDepth) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		a.conn.Close()
		a.conn = nil
	}
}
