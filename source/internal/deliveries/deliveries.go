// Package deliveries bounds how often a broker may deliver one message: a
// consumer that crashes while handling a message never records the
// failure, so only the broker's own delivery count can end that loop.
package deliveries

import (
	"context"
	"fmt"
	"strconv"

	"github.com/txinbox/txinbox"
)

// Guard wraps the handler of cfg so that a message whose header named
// countHeader (the broker's delivery count) exceeds max is dead-lettered as
// a permanent error without running the handler. verb names the count in
// the error ("delivered", "received").
func Guard[TTx any](cfg txinbox.Config[TTx], countHeader, verb string, max int) (txinbox.HandlerFunc[TTx], txinbox.BatchHandlerFunc[TTx]) {
	check := func(m *txinbox.Message) error {
		n, _ := strconv.Atoi(m.Header(countHeader))
		if n > max {
			return txinbox.Permanent(fmt.Errorf("%s %d times, more than MaxDeliveries (%d)", verb, n, max))
		}
		return nil
	}
	if h := cfg.Handler; h != nil {
		return func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			if err := check(m); err != nil {
				return err
			}
			return h(ctx, tx, m)
		}, nil
	}
	bh := cfg.BatchHandler
	if bh == nil {
		return nil, nil // NewProcessor reports it
	}
	return nil, func(ctx context.Context, tx TTx, msgs []*txinbox.Message) error {
		for _, m := range msgs {
			if err := check(m); err != nil {
				return err // the batch is redone one message at a time
			}
		}
		return bh(ctx, tx, msgs)
	}
}
