package serve

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/metrics/prom/outboxprom"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/server"
)

// newServeRelay is the outbox relay of serve --relay-target: it runs beside
// the sources, stops with them (sends in flight finish and are recorded)
// and exports its metrics on /metrics (the purger deletes the rows sent
// past the retention with the inbox rows: serverConfig). closeTarget
// closes its target.
func newServeRelay(o *serveOptions, db *clikit.InboxDB, logger *slog.Logger, reg prometheus.Registerer) (server.Relay, func(), error) {
	target, closeTarget, err := o.Relay.newTarget()
	if err != nil {
		return server.Relay{}, nil, err
	}
	st := db.OutboxStore()
	var relay *outbox.Relay
	m := outboxprom.New(outboxprom.Options{Stats: st.Stats, Logger: logger, Health: func() outbox.Health { return relay.Health() }})
	cfg := o.Relay.config(target, logger)
	cfg.OnSend = m.OnSend
	relay, err = outbox.New(st, cfg)
	if err != nil {
		closeTarget()
		return server.Relay{}, nil, err
	}
	if err := reg.Register(m); err != nil {
		closeTarget()
		return server.Relay{}, nil, err
	}
	return server.Relay{Name: "outbox relay to " + o.Relay.target, Relay: relay}, closeTarget, nil
}
