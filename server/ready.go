package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// readyCollector exports what /readyz says at each scrape, so that alerts
// need no probe of /readyz: txinbox_ready is 1 when every check passes
// (/readyz answers 200), else 0; txinbox_ready_check{check} is 1 or 0 per
// check ("database", "started", each source and relay by its name).
type readyCollector struct {
	s          *Server
	all, check *prometheus.Desc
}

func newReadyCollector(s *Server) readyCollector {
	return readyCollector{s: s,
		all: prometheus.NewDesc("txinbox_ready",
			"1 when every readiness check of /readyz passes, else 0 (starting, stopping, or a check fails).", nil, nil),
		check: prometheus.NewDesc("txinbox_ready_check",
			"1 when this readiness check of /readyz passes, else 0; check is database, started, durability (1 also with a risk accepted at start), or a source's or relay's name.",
			[]string{"check"}, nil)}
}

// Describe implements prometheus.Collector.
func (c readyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.all
	ch <- c.check
}

// Collect implements prometheus.Collector: it runs the checks of /readyz,
// within 2s as /readyz does (a check that has not answered by then fails).
func (c readyCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	checks, failing := c.s.readiness(ctx)
	ch <- prometheus.MustNewConstMetric(c.all, prometheus.GaugeValue, gaugeOf(len(failing) == 0))
	for name := range checks {
		ch <- prometheus.MustNewConstMetric(c.check, prometheus.GaugeValue, gaugeOf(!failing[name]), name)
	}
}

func gaugeOf(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}
