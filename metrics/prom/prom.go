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

// Metrics is a txinbox hook (OutcomeHook, BatchHook and AckHook) and a
// prometheus.Collector.
type Metrics struct {
	messages      *prometheus.CounterVec
	duplicates    *prometheus.CounterVec
	drift         *prometheus.CounterVec
	batchSize     prometheus.Histogram
	batchDuration *prometheus.HistogramVec
	handlerTime   prometheus.Histogram
	commitTime    *prometheus.HistogramVec
	ackDuration   *prometheus.HistogramVec
	ackedMessages *prometheus.CounterVec
	redone        prometheus.Counter
	transient     prometheus.Counter
	purged        *prometheus.CounterVec
	purgeDuration prometheus.Histogram
}

var (
	_ txinbox.OutcomeHook  = (*Metrics)(nil)
	_ txinbox.BatchHook    = (*Metrics)(nil)
	_ txinbox.AckHook      = (*Metrics)(nil)
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
	// The batch's own latencies share batch_duration's buckets, 0.5 ms to
	// about 16 s, so that their series can be compared bucket by bucket.
	latency := prometheus.ExponentialBuckets(0.0005, 2, 16)
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
			Buckets: latency}, []string{"result"}),
		handlerTime: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "handler_duration_seconds", ConstLabels: cl,
			Help:    "Time per batch spent in the handlers, the savepoint redo and transient retries included (batches that ran no handler are not observed).",
			Buckets: latency}),
		commitTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "commit_duration_seconds", ConstLabels: cl,
			Help:    "COMMIT round trip of a batch transaction (batches that never reached their commit are not observed).",
			Buckets: latency}, []string{"result"}),
		ackDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "ack_duration_seconds", ConstLabels: cl,
			Help:    "Time of one acknowledgement to the broker after a commit (ack, delete, offset commit); result ok or failed.",
			Buckets: latency}, []string{"source", "result"}),
		ackedMessages: counter("acked_messages_total",
			"Messages acknowledged to the broker after their commit (failed acks not counted).", "source"),
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
	if info.HandlerDuration > 0 {
		m.handlerTime.Observe(info.HandlerDuration.Seconds())
	}
	if info.CommitDuration > 0 {
		m.commitTime.WithLabelValues(result).Observe(info.CommitDuration.Seconds())
	}
	if info.Redone {
		m.redone.Inc()
	}
	m.transient.Add(float64(info.Transient))
}

// OnAck observes one acknowledgement to a broker and counts the messages
// it covered when it succeeded.
func (m *Metrics) OnAck(_ context.Context, info txinbox.AckInfo) {
	result := "ok"
	if info.Err != nil {
		result = "failed"
	}
	m.ackDuration.WithLabelValues(info.Source, result).Observe(info.Duration.Seconds())
	if info.Err == nil {
		m.ackedMessages.WithLabelValues(info.Source).Add(float64(info.Messages))
	}
}

// OnPurgeBatch observes one purge batch of the inbox tables; pass it as
// purge.Config.OnBatch.
func (m *Metrics) OnPurgeBatch(r store.PurgeResult, took time.Duration) {
	m.purged.WithLabelValues("inbox").Add(float64(r.Inbox))
	m.purged.WithLabelValues("attempts").Add(float64(r.Attempts))
	m.purged.WithLabelValues("drift").Add(float64(r.Drift))
	m.purgeDuration.Observe(took.Seconds())
}

// OnPurgeTable observes one purge batch of a table outside the inbox
// (purge.Config.Tables), counted under its name; pass it as
// purge.Config.OnTableBatch.
func (m *Metrics) OnPurgeTable(table string, rows int64, took time.Duration) {
	m.purged.WithLabelValues(table).Add(float64(rows))
	m.purgeDuration.Observe(took.Seconds())
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.messages, m.duplicates, m.drift, m.batchSize, m.batchDuration, m.handlerTime, m.commitTime,
		m.ackDuration, m.ackedMessages, m.redone, m.transient, m.purged, m.purgeDuration}
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
