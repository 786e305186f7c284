package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"
	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/amqp"
	"github.com/txinbox/txinbox/source/jetstream"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/source/sqs"
	"github.com/txinbox/txinbox/store"
)

// sourceFlags are the broker sources of serve. A source is on when any of
// its flags is set; then its required flags must be set too. Each source
// has its own processor (and scope) over the one inbox database.
type sourceFlags struct {
	KafkaBrokers, KafkaTopics, KafkaGroup, KafkaKey, KafkaScope string
	KafkaSessionTimeout                                         time.Duration
	// KafkaMaxAttempts, KafkaBackoffInitial and KafkaBackoffMax bound
	// how long a failing record holds its partition (kafkaHoldTime).
	KafkaMaxAttempts                     int
	KafkaBackoffInitial, KafkaBackoffMax time.Duration

	AMQPURL, AMQPQueue, AMQPKey, AMQPScope, AMQPRetryWindow string

	SQSQueueURL, SQSEndpoint, SQSRegion, SQSKey, SQSScope string

	NATSURL, NATSStream, NATSConsumer, NATSKey, NATSScope, NATSRetryWindow string
	NATSAckWait                                                            time.Duration

	// The sources' own retentions (--kafka-retention, ...); empty: --retention.
	KafkaRetention, AMQPRetention, SQSRetention, NATSRetention string

	amqpWindow, natsWindow time.Duration // parsed by validate
	// retentions are the parsed retentions by source kind.
	retentions map[string]server.Retention
	// name names a source of a config file's list (serve_config.go);
	// empty for the flags' sources, named by their kind.
	name string
}

func (f *sourceFlags) register(fs *flag.FlagSet) {
	s := fs.StringVar
	s(&f.KafkaBrokers, "kafka-brokers", "", "Kafka bootstrap brokers, host:port separated by commas (turns the Kafka source on)")
	s(&f.KafkaTopics, "kafka-topics", "", "Kafka topics consumed, separated by commas")
	s(&f.KafkaGroup, "kafka-group", "", "Kafka consumer group")
	s(&f.KafkaKey, "kafka-key", "offset", "message id of a record: offset (topic/partition/offset) or header:NAME")
	s(&f.KafkaScope, "kafka-scope", "kafka", "inbox scope of the Kafka records")
	clikit.DurationFlag(fs, &f.KafkaSessionTimeout, "kafka-session-timeout", 45*time.Second, false, "Kafka group session timeout")
	clikit.IntFlag(fs, &f.KafkaMaxAttempts, "kafka-max-attempts", 10, 1,
		"failed attempts that dead-letter a Kafka record; until then it holds its partition (see docs/kafka.md)")
	clikit.DurationFlag(fs, &f.KafkaBackoffInitial, "kafka-backoff-initial", time.Second, false,
		"wait after a Kafka record's first failed attempt, doubling after each further one")
	clikit.DurationFlag(fs, &f.KafkaBackoffMax, "kafka-backoff-max", 5*time.Minute, false, "longest wait between a Kafka record's attempts")
	s(&f.AMQPURL, "amqp-url", "", "RabbitMQ URL, amqp://user:pass@host:5672/vhost (turns the RabbitMQ source on)")
	s(&f.AMQPQueue, "amqp-queue", "", "RabbitMQ queue consumed (it must exist)")
	s(&f.AMQPKey, "amqp-key", "message-id", "message id of a delivery: message-id (the property) or header:NAME")
	s(&f.AMQPScope, "amqp-scope", "amqp", "inbox scope of the RabbitMQ deliveries")
	clikit.DurationTextFlag(fs, &f.AMQPRetryWindow, "amqp-retry-window", "", "how long RabbitMQ producers may resend a message (default: --retry-window)")
	s(&f.SQSQueueURL, "sqs-queue-url", "", "SQS queue URL (turns the SQS source on; credentials from the AWS SDK's default chain: environment, shared files and AWS_PROFILE, web identity, container or instance role)")
	s(&f.SQSEndpoint, "sqs-endpoint", "", "SQS endpoint URL (default: the region's)")
	s(&f.SQSRegion, "sqs-region", "", "AWS region of the queue (default: AWS_REGION, else the shared config profile's region)")
	s(&f.SQSKey, "sqs-key", "message-id", "message id of a message: message-id, dedup-id (FIFO) or attribute:NAME")
	s(&f.SQSScope, "sqs-scope", "sqs", "inbox scope of the SQS messages")
	s(&f.NATSURL, "nats-url", "", "NATS server URL(s), separated by commas (turns the NATS JetStream source on)")
	s(&f.NATSStream, "nats-stream", "", "JetStream stream consumed")
	s(&f.NATSConsumer, "nats-consumer", "", "durable JetStream consumer (created or updated at start)")
	s(&f.NATSKey, "nats-key", "msg-id", "message id of a message: msg-id (Nats-Msg-Id, else stream/sequence), sequence or header:NAME")
	s(&f.NATSScope, "nats-scope", "nats", "inbox scope of the NATS messages")
	clikit.DurationTextFlag(fs, &f.NATSRetryWindow, "nats-retry-window", "", "how long NATS publishers may resend a message (default: --retry-window)")
	clikit.DurationFlag(fs, &f.NATSAckWait, "nats-ack-wait", 30*time.Second, false, "JetStream AckWait: an unacked message comes back after it")
	for _, r := range []struct {
		v    *string
		name string
	}{{&f.KafkaRetention, "kafka"}, {&f.AMQPRetention, "amqp"}, {&f.SQSRetention, "sqs"}, {&f.NATSRetention, "nats"}} {
		clikit.DurationTextFlag(fs, r.v, r.name+"-retention", "", "keep the "+r.name+" scope's inbox rows this long (default: --retention)")
	}
}

// configured reports whether any broker source is configured.
func (f *sourceFlags) configured() bool {
	return f.KafkaBrokers+f.KafkaTopics+f.KafkaGroup+f.AMQPURL+f.AMQPQueue+f.SQSQueueURL+f.NATSURL+f.NATSStream+f.NATSConsumer != ""
}

// validate checks each configured source's flags; errors name the flag.
func (f *sourceFlags) validate(retryWindow time.Duration, def server.Retention) error {
	need := func(on bool, flags ...[2]string) error {
		if !on {
			return nil
		}
		for _, fl := range flags {
			if fl[1] == "" {
				return fmt.Errorf("--%s is required with the %s source", fl[0], strings.SplitN(fl[0], "-", 2)[0])
			}
		}
		return nil
	}
	if err := errors.Join(
		need(f.KafkaBrokers+f.KafkaTopics+f.KafkaGroup != "",
			[2]string{"kafka-brokers", f.KafkaBrokers}, [2]string{"kafka-topics", f.KafkaTopics}, [2]string{"kafka-group", f.KafkaGroup}),
		need(f.AMQPURL+f.AMQPQueue != "", [2]string{"amqp-url", f.AMQPURL}, [2]string{"amqp-queue", f.AMQPQueue}),
		need(f.NATSURL+f.NATSStream+f.NATSConsumer != "",
			[2]string{"nats-url", f.NATSURL}, [2]string{"nats-stream", f.NATSStream}, [2]string{"nats-consumer", f.NATSConsumer}),
	); err != nil {
		return err
	}
	for _, k := range [][3]string{
		{"kafka-key", f.KafkaKey, "offset"}, {"amqp-key", f.AMQPKey, "message-id"},
		{"sqs-key", f.SQSKey, "message-id dedup-id"}, {"nats-key", f.NATSKey, "msg-id sequence"},
	} {
		if err := checkKeyFlag(k[0], k[1], strings.Fields(k[2])); err != nil {
			return err
		}
	}
	if f.KafkaBackoffMax < f.KafkaBackoffInitial {
		return fmt.Errorf("--kafka-backoff-max %s is shorter than --kafka-backoff-initial %s", f.KafkaBackoffMax, f.KafkaBackoffInitial)
	}
	if f.KafkaSessionTimeout <= 0 || f.NATSAckWait < time.Second {
		return errors.New("--kafka-session-timeout must be positive and --nats-ack-wait at least 1s")
	}
	f.retentions = map[string]server.Retention{}
	for _, r := range []struct{ name, v string }{{"kafka", f.KafkaRetention}, {"amqp", f.AMQPRetention}, {"sqs", f.SQSRetention}, {"nats", f.NATSRetention}} {
		ret, err := retentionOr(r.name+"-retention", r.v, def)
		if err != nil {
			return err
		}
		f.retentions[r.name] = ret
	}
	var err error
	if f.amqpWindow, err = windowOr("amqp-retry-window", f.AMQPRetryWindow, retryWindow); err != nil {
		return err
	}
	f.natsWindow, err = windowOr("nats-retry-window", f.NATSRetryWindow, retryWindow)
	return err
}

// checkKeyFlag accepts one of the fixed names, or header:NAME (attribute:
// for SQS) with a name.
func checkKeyFlag(flagName, v string, fixed []string) error {
	for _, f := range fixed {
		if v == f {
			return nil
		}
	}
	prefix := "header:"
	if flagName == "sqs-key" {
		prefix = "attribute:"
	}
	if name, ok := strings.CutPrefix(v, prefix); ok && name != "" {
		return nil
	}
	return fmt.Errorf("--%s %q: use %s or %sNAME", flagName, v, strings.Join(fixed, ", "), prefix)
}

func windowOr(flagName, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := clikit.ParseRetention(v)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", flagName, err)
	}
	return d, nil
}

// retentionOr parses a source's --NAME retention, or returns def when empty.
func retentionOr(flagName, v string, def server.Retention) (server.Retention, error) {
	if v == "" {
		return def, nil
	}
	d, err := clikit.ParseRetention(v)
	if err != nil {
		return server.Retention{}, fmt.Errorf("--%s: %w", flagName, err)
	}
	return server.Retention{Keep: d, Setting: "--" + flagName + " " + v}, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// serveSource is one broker source as serve runs it: the source package's
// consumer, whose optional interfaces (source.Readier, source.Lagger,
// source.Horizoner) package server asks, and what serve adds to it.
type serveSource struct {
	name  string // kafka, amqp, sqs, nats, or the config file's name
	scope string
	src   source.Source
	// window is the producers' retry window (server.Source.RetryWindow),
	// if any.
	window source.Horizon
	close  func()
}

// sourceEnv is what building a source needs besides its flags.
type sourceEnv[TTx any] struct {
	driver store.Driver[TTx]
	inbox  func(name, scope string) txinbox.Config[TTx]
	logger *slog.Logger
	getenv func(string) string
}

// buildSources creates the configured broker sources; none connects yet
// (the SQS and Kafka clients connect lazily; NATS retries in background).
func buildSources[TTx any](f *sourceFlags, se sourceEnv[TTx]) ([]*serveSource, error) {
	var out []*serveSource
	closeAll := func() {
		for _, s := range out {
			s.close()
		}
	}
	for _, b := range []func(*sourceFlags, sourceEnv[TTx]) (*serveSource, error){
		kafkaSource[TTx], amqpSource[TTx], sqsSource[TTx], natsSource[TTx],
	} {
		s, err := b(f, se)
		if err != nil {
			closeAll()
			return nil, err
		}
		if s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// fromSource is a broker source as serve runs it; window, when set, is a
// horizon of the senders' own (a retry window) besides the broker's.
func fromSource(name, scope string, src source.Source, close func(), window source.Horizon) *serveSource {
	return &serveSource{name: name, scope: scope, src: src, close: close, window: window}
}

// newProcessor builds the processor of a source over se's inbox.
func newProcessor[TTx any](se sourceEnv[TTx], name string, inbox txinbox.Config[TTx]) (*txinbox.Processor[TTx], error) {
	proc, err := txinbox.NewProcessor(se.driver, inbox)
	if err != nil {
		return nil, fmt.Errorf("%s source: %w", name, err)
	}
	return proc, nil
}

func kafkaSource[TTx any](f *sourceFlags, se sourceEnv[TTx]) (*serveSource, error) {
	if f.KafkaBrokers == "" {
		return nil, nil
	}
	seeds, topics := splitList(f.KafkaBrokers), splitList(f.KafkaTopics)
	key := kafka.OffsetKey
	if name, ok := strings.CutPrefix(f.KafkaKey, "header:"); ok {
		key = kafka.HeaderKey(name)
	}
	inbox := se.inbox("kafka", f.KafkaScope)
	inbox.Ordered = true
	inbox.MaxAttempts, inbox.Backoff = f.KafkaMaxAttempts, exponentialBackoff(f.KafkaBackoffInitial, f.KafkaBackoffMax)
	lo, hi := kafkaHoldTime(f.KafkaMaxAttempts, f.KafkaBackoffInitial, f.KafkaBackoffMax)
	se.logger.Info("kafka: a record that keeps failing holds its partition until it is dead-lettered",
		"max_attempts", f.KafkaMaxAttempts, "hold_min", duration.Format(lo), "hold_max", duration.Format(hi))
	proc, err := newProcessor(se, "kafka", inbox)
	if err != nil {
		return nil, err
	}
	c, err := kafka.New(proc, kafka.Config{Seeds: seeds, Topics: topics, Group: f.KafkaGroup, Key: key, Logger: se.logger,
		ClientOptions: []kgo.Opt{kgo.SessionTimeout(f.KafkaSessionTimeout)}})
	if err != nil {
		return nil, fmt.Errorf("kafka source: %w", err)
	}
	if err := checkSeeds(seeds); err != nil {
		return nil, err
	}
	return fromSource("kafka", f.KafkaScope, c, func() {}, source.Horizon{}), nil
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

func amqpSource[TTx any](f *sourceFlags, se sourceEnv[TTx]) (*serveSource, error) {
	if f.AMQPURL == "" {
		return nil, nil
	}
	key := amqp.MessageIDKey
	if name, ok := strings.CutPrefix(f.AMQPKey, "header:"); ok {
		key = amqp.HeaderKey(name)
	}
	proc, err := newProcessor(se, "amqp", se.inbox("amqp", f.AMQPScope))
	if err != nil {
		return nil, err
	}
	c, err := amqp.New(proc, amqp.Config{URL: f.AMQPURL, Queue: f.AMQPQueue, Key: key, Logger: se.logger})
	if err != nil {
		return nil, fmt.Errorf("amqp source: %w", err)
	}
	window := source.Horizon{What: fmt.Sprintf("RabbitMQ queue %q", f.AMQPQueue), Within: f.amqpWindow,
		Figure: retryWindowFigure("amqp-retry-window", f.AMQPRetryWindow, f.amqpWindow)}
	return fromSource("amqp", f.AMQPScope, c, func() {}, window), nil
}

func retryWindowFigure(flagName, v string, d time.Duration) string {
	if v == "" {
		return "--retry-window " + duration.Format(d)
	}
	return "--" + flagName + " " + v
}

func sqsSource[TTx any](f *sourceFlags, se sourceEnv[TTx]) (*serveSource, error) {
	if f.SQSQueueURL == "" {
		return nil, nil
	}
	cfg, err := sqsConfig(f, se.getenv, se.logger)
	if err != nil {
		return nil, err
	}
	var opts []func(*awssqs.Options)
	if f.SQSEndpoint != "" {
		opts = append(opts, func(o *awssqs.Options) { o.BaseEndpoint = aws.String(f.SQSEndpoint) })
	}
	cl := awssqs.NewFromConfig(cfg, opts...)
	var key sqs.KeyFunc
	switch {
	case f.SQSKey == "dedup-id":
		key = sqs.DeduplicationIDKey
	case strings.HasPrefix(f.SQSKey, "attribute:"):
		key = sqs.AttributeKey(strings.TrimPrefix(f.SQSKey, "attribute:"))
	}
	proc, err := newProcessor(se, "sqs", se.inbox("sqs", f.SQSScope))
	if err != nil {
		return nil, err
	}
	c, err := sqs.New(proc, sqs.Config{Client: cl, QueueURL: f.SQSQueueURL, Key: key, Logger: se.logger})
	if err != nil {
		return nil, fmt.Errorf("sqs source: %w", err)
	}
	return fromSource("sqs", f.SQSScope, c, func() {}, source.Horizon{}), nil
}

func natsSource[TTx any](f *sourceFlags, se sourceEnv[TTx]) (*serveSource, error) {
	if f.NATSURL == "" {
		return nil, nil
	}
	var key jetstream.KeyFunc
	switch {
	case f.NATSKey == "sequence":
		key = jetstream.SequenceKey
	case strings.HasPrefix(f.NATSKey, "header:"):
		key = jetstream.HeaderKey(strings.TrimPrefix(f.NATSKey, "header:"))
	}
	proc, err := newProcessor(se, "nats", se.inbox("nats", f.NATSScope))
	if err != nil {
		return nil, err
	}
	// The connection is serve's, so that /readyz sees it before the
	// consumer runs; it retries in the background while the server is
	// down.
	nc, err := nats.Connect(f.NATSURL, nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true),
		nats.Name("txinbox serve "+f.NATSConsumer))
	if err != nil {
		return nil, fmt.Errorf("--nats-url: %w", err)
	}
	c, err := jetstream.New(proc, jetstream.Config{Conn: nc, Stream: f.NATSStream, Consumer: f.NATSConsumer, Key: key,
		AckWait: f.NATSAckWait, Logger: se.logger})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats source: %w", err)
	}
	window := source.Horizon{What: fmt.Sprintf("NATS stream %q", f.NATSStream), Within: f.natsWindow,
		Figure: retryWindowFigure("nats-retry-window", f.NATSRetryWindow, f.natsWindow)}
	return fromSource("nats", f.NATSScope, c, func() {
		if nc.IsConnected() {
			nc.FlushTimeout(2 * time.Second) //nolint:errcheck // best effort: unsent acks become redeliveries
		}
		nc.Close()
	}, window), nil
}

// sqsConfig loads the AWS configuration the way the AWS CLI and SDKs do:
// the region from --sqs-region, AWS_REGION or the shared config profile,
// and credentials from the SDK's default chain (environment keys, the shared
// credentials and config files with AWS_PROFILE, SSO, web identity as on
// EKS, the ECS container or EC2 instance role). Keys in txinbox's own
// environment are used first, so they win over a profile.
func sqsConfig(f *sourceFlags, getenv func(string) string, logger *slog.Logger) (aws.Config, error) {
	// The SDK's own warnings (an instance role looked for, say) go to
	// serve's log, in its format, rather than as bare lines on stderr.
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithLogger(logging.LoggerFunc(
		func(c logging.Classification, format string, v ...any) {
			level := slog.LevelWarn
			if c == logging.Debug {
				level = slog.LevelDebug
			}
			logger.Log(context.Background(), level, "aws sdk: "+fmt.Sprintf(format, v...))
		}))}
	region := f.SQSRegion
	if region == "" {
		region = getenv("AWS_REGION")
	}
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	if id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"); id != "" || secret != "" {
		if id == "" || secret == "" {
			return aws.Config{}, errors.New("the SQS source needs both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither (then the shared files or a role)")
		}
		opts = append(opts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN"))))
	}
	// Loading reads files only: credentials are fetched on the first call
	// (serve's retention check at start), so a missing role fails there.
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("the SQS source's AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("--sqs-region (or AWS_REGION, or a region in the shared config profile) is required with --sqs-queue-url")
	}
	return cfg, nil
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
