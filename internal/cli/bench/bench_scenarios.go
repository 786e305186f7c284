package bench

import (
	"context"
	"errors"
)

// apacheKafka is the Broker of the results measured on --kafka-brokers.
const apacheKafka = "apache-kafka"

// benchScenario is one scenario of the sliced part of the run.
type benchScenario struct {
	key, name string
	// broker is apacheKafka for the Kafka scenarios' run on
	// --kafka-brokers, "" otherwise.
	broker  string
	workers int
	run     func(context.Context, float64) (*benchResult, error)
}

// label names the scenario in failures: its key, and the broker when not
// the run's own.
func (s benchScenario) label() string {
	if s.broker != "" {
		return s.key + " (" + s.broker + ")"
	}
	return s.key
}

// scenarios is the sliced part of the run, in the order the slices take
// turns: with --kafka-brokers, the Kafka scenarios run on both clusters.
func (be *benchEnv) scenarios() []benchScenario {
	o := be.o
	out := []benchScenario{
		{key: "ceiling", name: "ceiling", workers: o.conns, run: be.ceiling},
		{key: "ceiling-full-row", name: "ceiling-full-row", workers: o.conns, run: be.ceilingFullRow},
		{key: "ceiling-one-row", name: "ceiling-one-row", workers: o.conns, run: be.ceilingOneRow},
		{key: "seed", name: "seed", workers: 1, run: func(ctx context.Context, d float64) (*benchResult, error) { return be.seed(ctx, d, 1) }},
		{key: "seed16", name: "seed", workers: 16, run: func(ctx context.Context, d float64) (*benchResult, error) { return be.seed(ctx, d, 16) }},
		{key: "txinbox", name: "txinbox", workers: o.conns, run: be.txinboxPG},
		{key: "light", name: "light-load", workers: 1, run: func(ctx context.Context, d float64) (*benchResult, error) { return be.lightLoad(ctx, d, 1000) }},
		{key: "light-busy", name: "light-load busy", workers: 1, run: be.lightBusy},
		{key: "declarative", name: "txinbox-declarative", workers: o.conns, run: be.declarative},
		{key: "database-sql", name: "txinbox", workers: o.conns, run: be.txinboxDatabaseSQL},
		{key: "database-sql-declarative", name: "txinbox-declarative", workers: o.conns, run: be.declarativeDatabaseSQL},
		{key: "sqlite", name: "txinbox", workers: 1, run: be.txinboxSQLite},
	}
	for _, k := range []*benchKafkaCluster{&be.kafka, &be.apache} {
		if k == &be.apache && len(o.kafkaBrokers) == 0 {
			continue
		}
		out = append(out,
			benchScenario{key: "e2e-kafka", name: "e2e-kafka", broker: k.broker, workers: o.conns, run: func(ctx context.Context, d float64) (*benchResult, error) {
				return benchKafka(ctx, o, be.pool, k, d, false)
			}},
			benchScenario{key: "kafka-watermark", name: "kafka-watermark", broker: k.broker, workers: o.conns, run: func(ctx context.Context, d float64) (*benchResult, error) {
				return benchKafka(ctx, o, be.pool, k, d, true)
			}})
	}
	return out
}

// runExtras runs the scenarios that are not sliced (the batch sweep, the
// growth, the scale-out), each bounded by --scenario-timeout: one that
// fails is recorded in rep.Failed with what it measured before, and the
// others run.
func (be *benchEnv) runExtras(ctx context.Context, rep *benchReport) {
	o := be.o
	if len(o.batchSizes) > 0 {
		if err := be.bounded(ctx, "batch-sizes", func(ctx context.Context) (err error) {
			rep.BatchSizes, err = be.batchSweep(ctx, o.batchSizes)
			return err
		}); err != nil {
			rep.fail("batch-sizes", err)
		}
	}
	if len(o.prefill) > 0 {
		if err := be.bounded(ctx, "growth", func(ctx context.Context) (err error) {
			rep.Growth, err = be.growth(ctx, o.prefill)
			return err
		}); err != nil {
			rep.fail("growth", err)
		}
	}
	if o.scenarios["scale-out"] {
		var points []scalePoint
		err := be.bounded(ctx, "scale-out", func(ctx context.Context) (err error) {
			points, err = be.scaleOut(ctx)
			return err
		})
		if err != nil {
			rep.fail("scale-out", err)
		}
		if !errors.Is(err, errAbandoned) {
			rep.ScaleOut = points // the drains measured before a failure
		}
		for i := range rep.ScaleOut {
			rep.ScaleOut[i].VsCeiling = ratio(rep.ScaleOut[i].MsgsPerSec, rep.CeilingMsgsPerS)
		}
	}
}
