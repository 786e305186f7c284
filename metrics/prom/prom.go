// Package prom exports txinbox's processing as Prometheus metrics: plug a
// *Metrics into txinbox.Config.Hooks and register it with a registry.
//
//	m := prom.New(prom.Options{})
//	prometheus.MustRegister(m)
//	p, _ := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{..., Hooks: []txinbox.Hook{m}})
package prom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// Options configures Metrics.
type Options struct {
	// Namespace prefixes every metric name. Defaults to "txinbox".
	Namespace string
	// ConstLabels are added to every metric. Defaults to none.
	ConstLabels prometheus.Labels
}

// Metrics is a txinbox hook (OutcomeHook and BatchHook) and a
// prometheus.Collector.
type Metrics struct {
	messages      *prometheus.CounterVec
	duplicates    *prometheus.CounterVec
	drift         *prometheus.CounterVec
	batchSize     prometheus.Histogram
	batchDuration *prometheus.HistogramVec
	redone        prometheus.Counter
	transient     prometheus.Counter
	purged        *prometheus.CounterVec
	purgeDuration prometheus.Histogram
}

var (
	_ txinbox.OutcomeHook  = (*Metrics)(nil)
	_ txinbox.BatchHook    = (*Metrics)(nil)
	_ prometheus.Collector = (*Metrics)(nil)
)

// New returns Metrics; register it with a prometheus.Registerer.
func New(opts Options) *Metrics {
	if opts.Namespace == "" {
		opts.Namespace = "txinbox"
	}
	ns, cl := opts.Namespace, opts.ConstLabels
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help, ConstLabels: cl}, labels)
	}
	return &Metrics{
		messages: counter("messages_total",
			"Messages by outcome: processed, duplicate, drift, retry, dead_lettered.", "scope", "source", "outcome"),
		duplicates: counter("duplicates_total",
			"Redeliveries skipped because the (scope, id) was already processed with the same payload.", "scope", "source"),
		drift: counter("drift_total",
			"Messages whose id was already processed with another payload (recorded, not run).", "scope", "source"),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_size", ConstLabels: cl,
			Help: "Messages per batch transaction.", Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000}}),
		batchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "batch_duration_seconds", ConstLabels: cl,
			Help:    "Time from begin to commit (or failure) of a batch transaction, handlers included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"result"}),
		redone: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "batches_redone_total", ConstLabels: cl,
			Help: "Batches redone with savepoints after a handler failed."}),
		transient: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "batch_transient_retries_total", ConstLabels: cl,
			Help: "Batch transactions retried after a transient database error."}),
		purged: counter("purged_rows_total", "Rows deleted by the purger, by table.", "table"),
		purgeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "purge_batch_duration_seconds", ConstLabels: cl,
			Help: "Time per purge batch transaction.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
	}
}

// OnOutcome counts one message.
func (m *Metrics) OnOutcome(_ context.Context, msg *txinbox.Message, res txinbox.Result) {
	m.messages.WithLabelValues(msg.Scope, msg.Source, res.Outcome.String()).Inc()
	switch res.Outcome {
	case txinbox.Duplicate:
		m.duplicates.WithLabelValues(msg.Scope, msg.Source).Inc()
	case txinbox.Drift:
		m.drift.WithLabelValues(msg.Scope, msg.Source).Inc()
	}
}

// OnBatch observes one batch.
func (m *Metrics) OnBatch(_ context.Context, info txinbox.BatchInfo) {
	result := "committed"
	if info.Err != nil {
		result = "failed"
	}
	m.batchSize.Observe(float64(info.Size))
	m.batchDuration.WithLabelValues(result).Observe(info.Duration.Seconds())
	if info.Redone {
		m.redone.Inc()
	}
	m.transient.Add(float64(info.Transient))
}

// OnPurgeBatch observes one purge batch; pass it as purger.Config.OnBatch.
func (m *Metrics) OnPurgeBatch(r store.PurgeResult, took time.Duration) {
	m.purged.WithLabelValues("inbox").Add(float64(r.Inbox))
	m.purged.WithLabelValues("attempts").Add(float64(r.Attempts))
	m.purged.WithLabelValues("drift").Add(float64(r.Drift))
	if r.Other > 0 {
		m.purged.WithLabelValues("other").Add(float64(r.Other))
	}
	m.purgeDuration.Observe(took.Seconds())
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.messages, m.duplicates, m.drift, m.batchSize, m.batchDuration, m.redone, m.transient, m.purged, m.purgeDuration}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}
