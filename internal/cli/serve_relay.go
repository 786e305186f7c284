package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/txinbox/txinbox/metrics/prom/outboxprom"
	"github.com/txinbox/txinbox/outbox"
)

// newServeRelay is the outbox relay of serve --relay-target: it runs beside
// the sources, stops with them (sends in flight finish and are recorded),
// exports its metrics on /metrics, and has the purger delete sent rows
// past the retention with the inbox rows.
func newServeRelay(o *serveOptions, db *inboxDB, logger *slog.Logger) (*serveSource, error) {
	target, closeTarget, err := o.Relay.newTarget()
	if err != nil {
		return nil, err
	}
	st := db.outboxStore()
	var relay *outbox.Relay
	m := outboxprom.New(outboxprom.Options{Stats: st.Stats, Logger: logger, Health: func() outbox.Health { return relay.Health() }})
	cfg := o.Relay.config(target, logger)
	cfg.OnSend = m.OnSend
	relay, err = outbox.New(st, cfg)
	if err != nil {
		closeTarget()
		return nil, err
	}
	o.ops.registry.MustRegister(m)
	also := o.ops.alsoPurge
	o.ops.alsoPurge = func(ctx context.Context, before time.Time, limit int) (int64, error) {
		var n int64
		if also != nil {
			var err error
			if n, err = also(ctx, before, limit); err != nil {
				return n, err
			}
		}
		sent, err := st.PurgeSent(ctx, before, limit)
		return n + sent, err
	}
	return &serveSource{
		name: "outbox relay to " + o.Relay.target,
		run:  relay.Run,
		// Not ready while its claims or recordings fail: rows wait
		// although the rest of serve looks fine.
		ready:    func(context.Context) error { return relay.Health().Err() },
		horizons: func(context.Context) ([]horizon, error) { return nil, nil },
		close:    closeTarget,
	}, nil
}
