// Package outboxprom exports an outbox relay as Prometheus metrics: sends
// by result and target latency (from outbox.Config.OnSend) and, on every
// scrape, the outbox backlog read from the database.
//
//	m := outboxprom.New(outboxprom.Options{Stats: store.Stats})
//	prometheus.MustRegister(m)
//	relay, _ := outbox.New(store, outbox.Config{Target: t, OnSend: m.OnSend})
package outboxprom

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/outbox"
)

// Options configures Metrics.
type Options struct {
	// Namespace prefixes every metric name. Defaults to "txinbox".
	Namespace string
	// ConstLabels are added to every metric.
	ConstLabels prometheus.Labels
	// Stats, when set, is read on every scrape for the backlog gauges
	// (typically an outbox.Store's Stats). A scrape waits at most
	// StatsTimeout for it; a failure leaves the gauges out of that scrape
	// and is logged.
	Stats func(context.Context) (outbox.Stats, error)
	// Health, when set, is read on every scrape for the relay's own
	// state (typically an outbox.Relay's Health): how long its claims or
	// recordings have been failing, and how many failed.
	Health func() outbox.Health
	// StatsTimeout bounds Stats. Defaults to 5s.
	StatsTimeout time.Duration
	// Logger logs a failing Stats. Defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock for the oldest row's age. Defaults to time.Now.
	Now func() time.Time
}

// Metrics is a prometheus.Collector fed by outbox.Config.OnSend.
type Metrics struct {
	opts    Options
	sends   *prometheus.CounterVec
	latency *prometheus.HistogramVec

	unsent, retrying, failed, sent, oldest *prometheus.Desc
	failingFor, batchErrors                *prometheus.Desc
}

var _ prometheus.Collector = (*Metrics)(nil)

// New returns Metrics; register it with a prometheus.Registerer and pass
// its OnSend to the relay's Config.
func New(opts Options) *Metrics {
	if opts.Namespace == "" {
		opts.Namespace = "txinbox"
	}
	if opts.StatsTimeout <= 0 {
		opts.StatsTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ns, cl := opts.Namespace, opts.ConstLabels
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "outbox", name), help, nil, cl)
	}
	return &Metrics{
		opts: opts,
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "outbox", Name: "sends_total", ConstLabels: cl,
			Help: "Outbox send attempts by result: sent (target confirmed), retried (will be tried again), failed (for good)."},
			[]string{"topic", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "outbox", Name: "send_duration_seconds", ConstLabels: cl,
			Help:    "Time the target took to confirm or refuse one row.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"result"}),
		unsent:   desc("unsent_rows", "Rows neither sent nor failed for good: the backlog, retrying rows included."),
		retrying: desc("retrying_rows", "Unsent rows that failed at least once."),
		failed:   desc("failed_rows", "Rows that failed for good and wait for a replay (the outbox's dead letters)."),
		sent:     desc("sent_rows", "Sent rows not purged yet."),
		oldest:   desc("oldest_unsent_age_seconds", "Age of the oldest unsent row; 0 when the backlog is empty."),
		failingFor: desc("relay_failing_seconds",
			"How long the relay's claims or recordings have been failing, one after another (a stuck relay); 0 when the last one worked."),
		batchErrors: desc("relay_batch_errors_total", "Claims or recordings of the relay that failed (database errors)."),
	}
}

// OnSend counts one send attempt; pass it as outbox.Config.OnSend.
func (m *Metrics) OnSend(e outbox.SendEvent) {
	topic := ""
	if e.Message != nil {
		topic = e.Message.Topic
	}
	m.sends.WithLabelValues(topic, e.Result.String()).Inc()
	m.latency.WithLabelValues(e.Result.String()).Observe(e.Latency.Seconds())
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.sends.Describe(ch)
	m.latency.Describe(ch)
	if m.opts.Stats != nil {
		for _, d := range []*prometheus.Desc{m.unsent, m.retrying, m.failed, m.sent, m.oldest} {
			ch <- d
		}
	}
	if m.opts.Health != nil {
		ch <- m.failingFor
		ch <- m.batchErrors
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.sends.Collect(ch)
	m.latency.Collect(ch)
	if m.opts.Health != nil {
		h := m.opts.Health()
		failing := 0.0
		if h.LastError != nil {
			failing = max(m.opts.Now().Sub(h.FailingSince).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(m.failingFor, prometheus.GaugeValue, failing)
		ch <- prometheus.MustNewConstMetric(m.batchErrors, prometheus.CounterValue, float64(h.BatchErrors))
	}
	if m.opts.Stats == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.StatsTimeout)
	defer cancel()
	s, err := m.opts.Stats(ctx)
	if err != nil {
		m.opts.Logger.Warn("outbox metrics: reading the backlog failed", "err", err)
		return
	}
	age := 0.0
	if !s.OldestUnsent.IsZero() {
		age = max(m.opts.Now().Sub(s.OldestUnsent).Seconds(), 0)
	}
	for _, g := range []struct {
		d *prometheus.Desc
		v float64
	}{{m.unsent, float64(s.Unsent)}, {m.retrying, float64(s.Retrying)}, {m.failed, float64(s.Failed)}, {m.sent, float64(s.Sent)}, {m.oldest, age}} {
		ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, g.v)
	}
}
