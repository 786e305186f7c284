package sqs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/source/sourcetest"
	"github.com/txinbox/txinbox/source/sqs"
	"github.com/txinbox/txinbox/source/sqs/sqsfake"
)

// envEndpoint points the tests at a real SQS endpoint (credentials and
// region from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
// and AWS_REGION) instead of the in-process fake. Not TXINBOX_SQS_ENDPOINT:
// txinbox serve reads that as --sqs-endpoint.
const envEndpoint = "TXINBOX_TEST_SQS_ENDPOINT"

// fake is the test process's SQS fake (parent only, without envEndpoint).
var fake *sqsfake.Server

func TestMain(m *testing.M) {
	sourcetest.RunChild(harness)
	if os.Getenv(envEndpoint) == "" {
		fake = sqsfake.NewServer()
	}
	code := m.Run()
	if fake != nil {
		fake.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// The SDK's JSON protocol replaces invalid UTF-8 in a string attribute
// with U+FFFD, and SQS refuses a NUL in one (it takes XML characters
// only): ids and headers with a NUL are sent to the fake only.
var harness = sourcetest.Harness{
	Name: "SQS",
	Features: sourcetest.Features{ConsumerGroups: true, Redelivery: true, DeadLetterDestination: true,
		NULInIDs: os.Getenv(envEndpoint) == "", LongIDs: true, BinaryHeaders: os.Getenv(envEndpoint) == ""},
	New:  newBroker,
	Open: openBroker,
}

func TestConformance(t *testing.T) {
	sourcetest.Run(t, harness)
}

// broker is one queue (and its dead-letter queue). Against the fake, the
// consumers reach it through a proxy that Interrupt cuts; against a real
// endpoint Interrupt does nothing.
type broker struct {
	Endpoint   string `json:"endpoint"` // the consumers' endpoint
	Direct     string `json:"direct"`
	QueueURL   string `json:"queue_url"`
	DeadLetter string `json:"dead_letter"`
	proxy      *sourcetest.Proxy
}

// idAttribute is the message attribute the suite's ids travel in.
const idAttribute = "message-id"

func client(endpoint string) *awssqs.Client {
	if real := os.Getenv(envEndpoint); real != "" {
		return awssqs.New(awssqs.Options{BaseEndpoint: aws.String(real), Region: os.Getenv("AWS_REGION"),
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"),
					SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"), SessionToken: os.Getenv("AWS_SESSION_TOKEN")}, nil
			})})
	}
	return awssqs.New(awssqs.Options{BaseEndpoint: aws.String(endpoint), Region: "us-east-1", Credentials: sqsfake.Credentials})
}

func randomName(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func newBroker(t *testing.T) (sourcetest.Broker, string) {
	t.Helper()
	b := &broker{}
	if real := os.Getenv(envEndpoint); real != "" {
		b.Direct, b.Endpoint = real, real
	} else {
		b.Direct = fake.URL()
		b.proxy = sourcetest.NewProxy(t, b.Direct[len("http://"):])
		b.Endpoint = "http://" + b.proxy.Addr()
	}
	ctx := context.Background()
	cl := client(b.Direct)
	name := randomName("sourcetest-")
	for _, q := range []struct {
		name string
		url  *string
	}{{name, &b.QueueURL}, {name + "-dlq", &b.DeadLetter}} {
		out, err := cl.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(q.name)})
		if err != nil {
			t.Fatal(err)
		}
		*q.url = *out.QueueUrl
		t.Cleanup(func() {
			cl.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) //nolint:errcheck // best effort
		})
	}
	desc, _ := json.Marshal(b) // strings only
	return b, string(desc)
}

func openBroker(_ context.Context, desc string) (sourcetest.Broker, error) {
	b := &broker{}
	return b, json.Unmarshal([]byte(desc), b)
}

func (b *broker) Publish(ctx context.Context, msgs ...sourcetest.Message) error {
	cl := client(b.Direct)
	for start := 0; start < len(msgs); start += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for i, m := range msgs[start:min(start+10, len(msgs))] {
			e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(m.Body))}
			e.MessageAttributes = map[string]types.MessageAttributeValue{}
			if m.ID != "" {
				e.MessageAttributes[idAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(m.ID)}
			}
			for _, h := range m.Headers {
				e.MessageAttributes[h.Key] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(h.Value)}
			}
			entries = append(entries, e)
		}
		if _, err := cl.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: &b.QueueURL, Entries: entries}); err != nil {
			return err
		}
	}
	return nil
}

// Consume keys on the message-id attribute, so that a message without it
// is dead-lettered as the suite expects.
func (b *broker) Consume(ctx context.Context, inbox sourcetest.Inbox) error {
	proc, err := inbox.Processor()
	if err != nil {
		return err
	}
	c, err := sqs.New(proc, sqs.Config{
		Client: client(b.Endpoint), QueueURL: b.QueueURL, DeadLetterQueueURL: b.DeadLetter,
		Key:      sqs.AttributeKey(idAttribute),
		WaitTime: time.Second, VisibilityTimeout: 2 * time.Second,
		ErrorBackoff: func(int) time.Duration { return 100 * time.Millisecond },
		Logger:       inbox.Logger,
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

func (b *broker) Pending(ctx context.Context) (int, error) {
	out, err := client(b.Direct).GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: &b.QueueURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		v, _ := strconv.Atoi(out.Attributes[a])
		n += v
	}
	return n, nil
}

func (b *broker) Interrupt() {
	if b.proxy != nil {
		b.proxy.Cut()
	}
}

func (b *broker) DeadLetters(ctx context.Context) ([][]byte, error) {
	out, err := client(b.Direct).ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: &b.DeadLetter,
		MaxNumberOfMessages: 10, VisibilityTimeout: 0})
	if err != nil {
		return nil, err
	}
	var bodies [][]byte
	for _, m := range out.Messages {
		bodies = append(bodies, []byte(aws.ToString(m.Body)))
	}
	return bodies, nil
}
