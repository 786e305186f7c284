package serve

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source/kafka"
)

// kafkaKind is the Kafka source: --kafka-*.
type kafkaKind struct {
	commonFlags
	Brokers, Topics, Group string
	SessionTimeout         time.Duration
	// MaxAttempts, BackoffInitial and BackoffMax bound how long a failing
	// record holds its partition (kafkaHoldTime).
	MaxAttempts                int
	BackoffInitial, BackoffMax time.Duration
}

func newKafkaKind() sourceKind { return &kafkaKind{} }

func (*kafkaKind) name() string  { return "kafka" }
func (*kafkaKind) title() string { return "Kafka" }

func (k *kafkaKind) register(fs *flag.FlagSet) {
	fs.StringVar(&k.Brokers, "kafka-brokers", "", "Kafka bootstrap brokers, host:port separated by commas (turns the Kafka source on)")
	fs.StringVar(&k.Topics, "kafka-topics", "", "Kafka topics consumed, separated by commas")
	fs.StringVar(&k.Group, "kafka-group", "", "Kafka consumer group")
	k.commonFlags.register(fs, "kafka", "offset", "message id of a record: offset (topic/partition/offset) or header:NAME",
		"inbox scope of the Kafka records")
	clikit.DurationFlag(fs, &k.SessionTimeout, "kafka-session-timeout", 45*time.Second, false, "Kafka group session timeout")
	clikit.IntFlag(fs, &k.MaxAttempts, "kafka-max-attempts", 10, 1,
		"failed attempts that dead-letter a Kafka record; until then it holds its partition (see docs/kafka.md)")
	clikit.DurationFlag(fs, &k.BackoffInitial, "kafka-backoff-initial", time.Second, false,
		"wait after a Kafka record's first failed attempt, doubling after each further one")
	clikit.DurationFlag(fs, &k.BackoffMax, "kafka-backoff-max", 5*time.Minute, false, "longest wait between a Kafka record's attempts")
}

func (k *kafkaKind) required() []setting {
	return []setting{{"kafka-brokers", k.Brokers}, {"kafka-topics", k.Topics}, {"kafka-group", k.Group}}
}

func (k *kafkaKind) validate(_ time.Duration, def server.Retention) error {
	if err := k.commonFlags.validate("kafka", []string{"offset"}, def); err != nil {
		return err
	}
	if k.BackoffMax < k.BackoffInitial {
		return fmt.Errorf("--kafka-backoff-max %s is shorter than --kafka-backoff-initial %s", k.BackoffMax, k.BackoffInitial)
	}
	if k.SessionTimeout <= 0 {
		return fmt.Errorf("--kafka-session-timeout %s: must be positive", k.SessionTimeout)
	}
	return nil
}

func (k *kafkaKind) build(se sourceEnv) (server.Source, func(), error) {
	seeds, topics := splitList(k.Brokers), splitList(k.Topics)
	key := kafka.OffsetKey
	if name, ok := strings.CutPrefix(k.Key, "header:"); ok {
		key = kafka.HeaderKey(name)
	}
	lo, hi := kafkaHoldTime(k.MaxAttempts, k.BackoffInitial, k.BackoffMax)
	se.logger.Info("kafka: a record that keeps failing holds its partition until it is dead-lettered",
		"max_attempts", k.MaxAttempts, "hold_min", duration.Format(lo), "hold_max", duration.Format(hi))
	proc, err := se.processor("kafka", k.Scope, processorSettings{Ordered: true, MaxAttempts: k.MaxAttempts,
		Backoff: exponentialBackoff(k.BackoffInitial, k.BackoffMax)})
	if err != nil {
		return server.Source{}, nil, err
	}
	c, err := kafka.New(proc, kafka.Config{Seeds: seeds, Topics: topics, Group: k.Group, Key: key, Logger: se.logger,
		ClientOptions: []kgo.Opt{kgo.SessionTimeout(k.SessionTimeout)}})
	if err != nil {
		return server.Source{}, nil, fmt.Errorf("kafka source: %w", err)
	}
	if err := checkSeeds(seeds); err != nil {
		return server.Source{}, nil, err
	}
	return server.Source{Name: "kafka", Scope: k.Scope, Source: c, Retention: k.retention}, func() {}, nil
}

// checkSeeds refuses a seed list the Kafka client refuses: a usage error
// at start, not when the consumer's Run creates its client.
func checkSeeds(seeds []string) error {
	probe, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return fmt.Errorf("--kafka-brokers: %w", err)
	}
	probe.Close()
	return nil
}

// exponentialBackoff waits initial after the first failed attempt,
// doubling after each further one up to max, plus up to a fifth of it at
// random (as txinbox.DefaultBackoff, which is exponentialBackoff(1s, 5m)).
func exponentialBackoff(initial, max time.Duration) txinbox.BackoffFunc {
	return func(attempts int) time.Duration {
		d := backoffStep(initial, max, attempts)
		return d + time.Duration(rand.Int64N(int64(d/5)+1))
	}
}

// backoffStep is exponentialBackoff without the jitter.
func backoffStep(initial, max time.Duration, attempts int) time.Duration {
	d := initial
	for i := 1; i < attempts && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// kafkaHoldTime is how long a record whose every attempt fails holds its
// partition (the records behind it wait: a partition is processed in
// order) before its last attempt dead-letters it: the waits after the
// first maxAttempts-1 failures, without and with the largest jitter. The
// handler's own run time comes on top.
func kafkaHoldTime(maxAttempts int, initial, max time.Duration) (lo, hi time.Duration) {
	for a := 1; a < maxAttempts; a++ {
		d := backoffStep(initial, max, a)
		lo, hi = lo+d, hi+d+d/5
	}
	return lo, hi
}
