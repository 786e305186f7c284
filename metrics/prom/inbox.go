package prom

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/store"
)

// InboxOptions configure an InboxCollector.
type InboxOptions struct {
	Namespace   string            // default "txinbox"
	ConstLabels prometheus.Labels // added to every series
	// Retention is the age past which a row waits for the purge (default
	// 30 days, the purger's).
	Retention time.Duration
	// MaxAge is how long a reading is reused by later scrapes (default
	// 15 s), so that several scrapers do not multiply the queries.
	MaxAge time.Duration
	// Timeout bounds one reading (default 5 s); a scrape then reports the
	// previous reading, or nothing, and counts the error.
	Timeout time.Duration
	Logger  *slog.Logger // default: slog.Default()
}

// InboxCollector reports the inbox's size and its purge lag, read from the
// database when scraped (at most once per MaxAge):
//
//	txinbox_inbox_rows                       rows (PostgreSQL: the planner's estimate past 100,000)
//	txinbox_inbox_expired_rows               rows older than the retention, waiting for the purge
//	txinbox_inbox_oldest_row_age_seconds     age of the oldest row
//	txinbox_inbox_oldest_expired_age_seconds how long the oldest row has been past the retention (0: none)
//	txinbox_inbox_gauge_errors_total         readings that failed
//
// It uses indexes and estimates only (store.GaugeReader), never a scan of the
// whole table. A failed reading never fails the scrape.
type InboxCollector struct {
	r    store.GaugeReader
	opts InboxOptions

	rows, expired, oldestAge, oldestExpired *prometheus.Desc
	errors                                  prometheus.Counter

	mu   sync.Mutex
	last store.InboxGauges
	at   time.Time // of last; zero: none yet
}

var _ prometheus.Collector = (*InboxCollector)(nil)

// NewInboxCollector returns a collector of r's inbox figures; register it
// with a prometheus.Registerer. *pgstore.Driver and *sqlitestore.Driver are
// GaugeReaders.
func NewInboxCollector(r store.GaugeReader, opts InboxOptions) *InboxCollector {
	if opts.Namespace == "" {
		opts.Namespace = "txinbox"
	}
	if opts.Retention <= 0 {
		opts.Retention = 30 * 24 * time.Hour
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = 15 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(opts.Namespace, "inbox", name), help, nil, opts.ConstLabels)
	}
	return &InboxCollector{r: r, opts: opts,
		rows: desc("rows", "Inbox rows (PostgreSQL: the planner's estimate once past 100,000 rows)."),
		expired: desc("expired_rows",
			"Inbox rows received longer ago than the retention: waiting for the purge."),
		oldestAge: desc("oldest_row_age_seconds", "Age of the oldest inbox row (0: the inbox is empty)."),
		oldestExpired: desc("oldest_expired_age_seconds",
			"How long the oldest inbox row has been past the retention: the purge lag (0: none)."),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: opts.Namespace, Subsystem: "inbox",
			Name: "gauge_errors_total", Help: "Readings of the inbox gauges that failed.", ConstLabels: opts.ConstLabels}),
	}
}

// Describe implements prometheus.Collector.
func (c *InboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rows
	ch <- c.expired
	ch <- c.oldestAge
	ch <- c.oldestExpired
	c.errors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *InboxCollector) Collect(ch chan<- prometheus.Metric) {
	defer c.errors.Collect(ch)
	g, ok := c.read()
	if !ok {
		return
	}
	now := time.Now()
	var age, pastRetention float64
	if !g.OldestReceived.IsZero() {
		age = max(0, now.Sub(g.OldestReceived).Seconds())
		pastRetention = max(0, age-c.opts.Retention.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.rows, prometheus.GaugeValue, float64(g.Rows))
	ch <- prometheus.MustNewConstMetric(c.expired, prometheus.GaugeValue, float64(g.Expired))
	ch <- prometheus.MustNewConstMetric(c.oldestAge, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(c.oldestExpired, prometheus.GaugeValue, pastRetention)
}

// read returns a reading no older than MaxAge, reading the database when
// needed; on an error, the previous reading if there is one.
func (c *InboxCollector) read() (store.InboxGauges, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < c.opts.MaxAge {
		return c.last, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	g, err := c.r.InboxGauges(ctx, time.Now().Add(-c.opts.Retention))
	if err != nil {
		c.errors.Inc()
		c.opts.Logger.Warn("txinbox: reading the inbox gauges", "err", err)
		return c.last, !c.at.IsZero()
	}
	c.last, c.at = g, time.Now()
	return g, true
}
