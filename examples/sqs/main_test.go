package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/txinbox/txinbox/source/sqs/sqsfake"
)

// TestRun runs the example against the in-repo SQS fake: an event sent
// twice is one invoice row, and both messages are deleted.
func TestRun(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "sqsfake")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "sqsfake")
	t.Setenv("AWS_REGION", "us-east-1")
	fake := sqsfake.NewServer()
	defer fake.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := awssqs.New(awssqs.Options{BaseEndpoint: aws.String(fake.URL()), Region: "us-east-1", Credentials: sqsfake.Credentials})
	q, err := cl.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String("invoices")})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := cl.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("INV-1"),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"message-id": {DataType: aws.String("String"), StringValue: aws.String("INV-1")}}}); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-queue-url", *q.QueueUrl, "-endpoint", fake.URL(), "-db", filepath.Join(t.TempDir(), "inbox.db")}, &out)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, err := cl.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if a.Attributes["ApproximateNumberOfMessages"] == "0" && a.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("messages still in the queue after 20s: %v", a.Attributes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "processed 1, duplicates 1, dead-lettered 0, deleted 2") {
		t.Errorf("output %q", out.String())
	}
}
