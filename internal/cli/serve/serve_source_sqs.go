package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"

	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source/sqs"
)

// sqsKind is the SQS source: --sqs-*.
type sqsKind struct {
	commonFlags
	QueueURL, Endpoint, Region string
}

func newSQSKind() sourceKind { return &sqsKind{} }

func (*sqsKind) name() string  { return "sqs" }
func (*sqsKind) title() string { return "SQS" }

func (k *sqsKind) register(fs *flag.FlagSet) {
	fs.StringVar(&k.QueueURL, "sqs-queue-url", "", "SQS queue URL (turns the SQS source on; credentials from the AWS SDK's default chain: environment, shared files and AWS_PROFILE, web identity, container or instance role)")
	fs.StringVar(&k.Endpoint, "sqs-endpoint", "", "SQS endpoint URL (default: the region's)")
	fs.StringVar(&k.Region, "sqs-region", "", "AWS region of the queue (default: AWS_REGION, else the shared config profile's region)")
	k.commonFlags.register(fs, "sqs", "message-id", "message id of a message: message-id, dedup-id (FIFO) or attribute:NAME",
		"inbox scope of the SQS messages")
}

func (k *sqsKind) required() []setting { return []setting{{"sqs-queue-url", k.QueueURL}} }

func (k *sqsKind) validate(_ time.Duration, def server.Retention) error {
	return k.commonFlags.validate("sqs", []string{"message-id", "dedup-id"}, def)
}

func (k *sqsKind) build(se sourceEnv) (server.Source, func(), error) {
	cfg, err := k.awsConfig(se.getenv, se.logger)
	if err != nil {
		return server.Source{}, nil, err
	}
	var opts []func(*awssqs.Options)
	if k.Endpoint != "" {
		opts = append(opts, func(o *awssqs.Options) { o.BaseEndpoint = aws.String(k.Endpoint) })
	}
	cl := awssqs.NewFromConfig(cfg, opts...)
	var key sqs.KeyFunc
	switch {
	case k.Key == "dedup-id":
		key = sqs.DeduplicationIDKey
	case strings.HasPrefix(k.Key, "attribute:"):
		key = sqs.AttributeKey(strings.TrimPrefix(k.Key, "attribute:"))
	}
	proc, err := se.processor("sqs", k.Scope, processorSettings{})
	if err != nil {
		return server.Source{}, nil, err
	}
	c, err := sqs.New(proc, sqs.Config{Client: cl, QueueURL: k.QueueURL, Key: key, Logger: se.logger})
	if err != nil {
		return server.Source{}, nil, fmt.Errorf("sqs source: %w", err)
	}
	return server.Source{Name: "sqs", Scope: k.Scope, Source: c, Retention: k.retention}, func() {}, nil
}

// awsConfig loads the AWS configuration the way the AWS CLI and SDKs do:
// the region from --sqs-region, AWS_REGION or the shared config profile,
// and credentials from the SDK's default chain (environment keys, the shared
// credentials and config files with AWS_PROFILE, SSO, web identity as on
// EKS, the ECS container or EC2 instance role). Keys in txinbox's own
// environment are used first, so they win over a profile.
func (k *sqsKind) awsConfig(getenv func(string) string, logger *slog.Logger) (aws.Config, error) {
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
	region := k.Region
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
