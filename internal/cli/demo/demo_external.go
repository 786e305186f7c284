package demo

import (
	"context"
	"flag"
	"strings"

	"github.com/txinbox/txinbox/internal/brokers"
	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// demoExternal names brokers the demo uses instead of starting its own in
// a txinbox-brokers child process (internal/brokers): the production
// binary links no broker servers.
type demoExternal struct {
	kafka string // comma-separated seeds
	nats  string
	sqs   string
}

// register adds the flags. They read no environment variables on purpose:
// serve's TXINBOX_KAFKA_BROKERS and the like name production brokers, and
// the demo creates topics, streams and queues.
func (e *demoExternal) register(fs *flag.FlagSet) {
	fs.StringVar(&e.kafka, "kafka-brokers", "",
		"Kafka seeds (host:port,...) of --source kafka and --scenario invoicer (default: start kfake in a txinbox-brokers process)")
	fs.StringVar(&e.nats, "nats-url", "",
		"NATS server with JetStream of --source nats (default: start one in a txinbox-brokers process)")
	fs.StringVar(&e.sqs, "sqs-endpoint", "",
		"SQS endpoint of --source sqs, static test credentials (default: start the SQS fake in a txinbox-brokers process)")
}

// KafkaSeeds splits --kafka-brokers.
func (e *demoExternal) KafkaSeeds() []string {
	var seeds []string
	for s := range strings.SplitSeq(e.kafka, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// StartBrokers starts what o asks for in a txinbox-brokers process,
// reporting a slow first build on env's stderr.
func StartBrokers(ctx context.Context, env *clikit.Env, o brokers.Options) (*brokers.Running, error) {
	o.Progress = env.Stderr
	return brokers.Start(ctx, o)
}
