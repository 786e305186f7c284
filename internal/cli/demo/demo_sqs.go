package demo

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/brokers"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/source/sqs"
	"github.com/txinbox/txinbox/store"
)

// The SQS demo: the parent starts the in-repo SQS fake (sqsfake, the JSON
// protocol of the AWS SDK) in a txinbox-brokers child process (or uses
// --sqs-endpoint) and sends the plan to a
// queue of the run, with the event id in the message attribute
// "message-id" (every send gets a new MessageId, so re-sends need a key of
// the producer's).

func runDemoSQS(ctx context.Context, env *clikit.Env, o Options) (*demoSummary, error) {
	return runQueueDemo(ctx, env, o, func(ctx context.Context, run string) (queueBroker, error) {
		return startSQSDemo(ctx, env, o.External.sqs, run)
	})
}

// sqsDemo is the endpoint and the run's queue.
type sqsDemo struct {
	brokers  *brokers.Running // nil with --sqs-endpoint
	endpoint string
	cl       *awssqs.Client
	queueURL string
}

func sqsDemoClient(endpoint string) *awssqs.Client {
	return awssqs.New(awssqs.Options{BaseEndpoint: aws.String(endpoint), Region: "us-east-1", Credentials: brokers.SQSCredentials})
}

func startSQSDemo(ctx context.Context, env *clikit.Env, endpoint, run string) (queueBroker, error) {
	b := &sqsDemo{endpoint: endpoint}
	if endpoint == "" {
		r, err := StartBrokers(ctx, env, brokers.Options{SQS: true})
		if err != nil {
			return nil, err
		}
		b.brokers, b.endpoint = r, r.SQSEndpoint
	}
	b.cl = sqsDemoClient(b.endpoint)
	out, err := b.cl.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String("invoices-" + run),
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(int(demoAckWait.Seconds()))}})
	if err != nil {
		b.close()
		return nil, fmt.Errorf("creating the queue: %w", err)
	}
	b.queueURL = *out.QueueUrl
	return b, nil
}

func (b *sqsDemo) where() string {
	if b.brokers != nil {
		return "SQS fake on " + b.endpoint
	}
	return "SQS at " + b.endpoint
}

func (b *sqsDemo) close() {
	if b.brokers != nil {
		b.brokers.Stop() //nolint:errcheck // best effort at the end
	}
}

func (b *sqsDemo) publish(ctx context.Context, ids, payloads []string, stream []int) error {
	for start := 0; start < len(stream); start += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for i := start; i < min(start+10, len(stream)); i++ {
			m := stream[i]
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(payloads[m]),
				MessageAttributes: map[string]types.MessageAttributeValue{
					demoIDHeader: {DataType: aws.String("String"), StringValue: aws.String(ids[m])}},
			})
		}
		out, err := b.cl.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: &b.queueURL, Entries: entries})
		if err != nil {
			return err
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("%d messages not sent: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
	}
	return nil
}

// pending counts the visible, in-flight and delayed messages (exact on
// the fake).
func (b *sqsDemo) pending(ctx context.Context) (int, bool, error) {
	out, err := b.cl.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: &b.queueURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		return 0, false, err
	}
	n := 0
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		v, _ := strconv.Atoi(out.Attributes[a])
		n += v
	}
	return n, true, nil
}

func (b *sqsDemo) childArgs() []string {
	return []string{"demo-consumer-sqs", "--endpoint", b.endpoint, "--queue-url", b.queueURL}
}

// RunConsumerSQS is the hidden child command: one consumer of the
// demo's queue, until its stdin closes or it is killed.
func RunConsumerSQS(ctx context.Context, env *clikit.Env, args []string) int {
	fs := flag.NewFlagSet("demo-consumer-sqs", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var f queueChildFlags
	f.register(fs, env)
	endpoint := fs.String("endpoint", "", "the SQS endpoint")
	queueURL := fs.String("queue-url", "", "the queue to consume")
	if err := fs.Parse(args); err != nil {
		return clikit.ExitUsage
	}
	return runQueueChild(ctx, env, &f, "demo-consumer-sqs", func(ctx context.Context, c *demoConsumer, db *clikit.InboxDB) error {
		if db.PG != nil {
			return consumeSQS(ctx, c, db.PG, clikit.PGTxExec, *endpoint, *queueURL)
		}
		return consumeSQS(ctx, c, db.SQL, db.SQLExec(), *endpoint, *queueURL)
	})
}

func consumeSQS[TTx any](ctx context.Context, c *demoConsumer, d store.Driver[TTx], exec clikit.TxExecFunc[TTx], endpoint, queueURL string) error {
	key := sqs.AttributeKey(demoIDHeader)
	if c.sabotage == SabotageDeliveryKey {
		key = sqs.MessageIDKey // a re-send has a new MessageId: its effect runs again
	}
	proc, err := txinbox.NewProcessor(d, queueInboxConfig(c, exec))
	if err != nil {
		return err
	}
	consumer, err := sqs.New(proc, sqs.Config{
		Client: sqsDemoClient(endpoint), QueueURL: queueURL, Key: key, VisibilityTimeout: demoAckWait, Logger: c.log,
	})
	if err != nil {
		return err
	}
	return consumer.Run(ctx)
}
