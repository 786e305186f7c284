package prom

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/httpinbox"
)

// HTTPMetrics counts what the idempotency middleware (package httpinbox)
// made of each request: plug it into httpinbox.Config.Observers and
// register it. One counter, txinbox_http_requests_total{route, event,
// status}: event is processed, replayed, conflict (409), mismatch (422),
// missing_key, invalid_key, dead_lettered, failed, unavailable,
// body_refused or unidentified.
type HTTPMetrics struct {
	requests *prometheus.CounterVec
}

var (
	_ httpinbox.Observer   = (*HTTPMetrics)(nil)
	_ prometheus.Collector = (*HTTPMetrics)(nil)
)

// NewHTTP returns HTTPMetrics; register it with a prometheus.Registerer.
func NewHTTP(opts Options) *HTTPMetrics {
	if opts.Namespace == "" {
		opts.Namespace = "txinbox"
	}
	return &HTTPMetrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: opts.Namespace, Name: "http_requests_total", ConstLabels: opts.ConstLabels,
		Help: "Requests through the idempotency middleware, by route, what became of them (event) and the status sent.",
	}, []string{"route", "event", "status"})}
}

// OnHTTPEvent counts one request.
func (m *HTTPMetrics) OnHTTPEvent(_ context.Context, ev httpinbox.Event) {
	m.requests.WithLabelValues(ev.Route, ev.Kind.String(), strconv.Itoa(ev.Status)).Inc()
}

// Describe implements prometheus.Collector.
func (m *HTTPMetrics) Describe(ch chan<- *prometheus.Desc) { m.requests.Describe(ch) }

// Collect implements prometheus.Collector.
func (m *HTTPMetrics) Collect(ch chan<- prometheus.Metric) { m.requests.Collect(ch) }
