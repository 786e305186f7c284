package jetstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/txinbox/txinbox/source"
)

// conn is Run's connection, else Config.Conn, else nil.
func (c *Consumer) conn() *nats.Conn {
	if nc := c.nc.Load(); nc != nil {
		return nc
	}
	return c.cfg.Conn
}

// Ready returns nil while the connection (Run's, or Config.Conn) is
// connected.
func (c *Consumer) Ready(context.Context) error {
	nc := c.conn()
	if nc == nil {
		return errors.New("not running")
	}
	if !nc.IsConnected() {
		return fmt.Errorf("not connected (%s)", nc.Status())
	}
	return nil
}

// Lag returns the durable consumer's messages not yet acknowledged, under
// the partition "": NumPending (the stream's messages not yet delivered
// to it) plus NumAckPending (delivered, not acked). The second part
// counts the messages being processed and those JetStream handed to a
// pull request whose consumer has since stopped: they wait for AckWait
// before they are delivered again, and are not done.
func (c *Consumer) Lag(ctx context.Context) ([]source.Lag, error) {
	nc := c.conn()
	if nc == nil {
		return nil, errors.New("not running")
	}
	js, err := natsjs.New(nc)
	if err != nil {
		return nil, err
	}
	cons, err := js.Consumer(ctx, c.cfg.Stream, c.cfg.Consumer)
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	return []source.Lag{{Messages: int64(info.NumPending) + int64(info.NumAckPending)}}, nil
}
