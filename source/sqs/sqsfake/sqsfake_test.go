package sqsfake_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/txinbox/txinbox/source/sqs/sqsfake"
)

func newClient(t *testing.T) (*sqsfake.Server, *awssqs.Client) {
	t.Helper()
	srv := sqsfake.NewServer()
	t.Cleanup(srv.Close)
	return srv, awssqs.New(awssqs.Options{BaseEndpoint: aws.String(srv.URL()), Region: "us-east-1", Credentials: sqsfake.Credentials})
}

func createQueue(t *testing.T, cl *awssqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := cl.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: &name, Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return *out.QueueUrl
}

func receive(t *testing.T, cl *awssqs.Client, q string, n int32, vis int32) []types.Message {
	t.Helper()
	out, err := cl.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: n,
		VisibilityTimeout: vis, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

// The SDK checks the body digests of SendMessage and ReceiveMessage; the
// receive count grows with each receive; only the latest receipt handle
// deletes.
func TestReceiveCountsAndStaleReceipts(t *testing.T) {
	t.Parallel()
	_, cl := newClient(t)
	ctx := context.Background()
	q := createQueue(t, cl, "invoices", nil)
	_, err := cl.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("héllo"),
		MessageAttributes: map[string]types.MessageAttributeValue{"message-id": {DataType: aws.String("String"), StringValue: aws.String("m-1")}}})
	if err != nil {
		t.Fatal(err)
	}
	first := receive(t, cl, q, 10, 30)
	if len(first) != 1 || *first[0].Body != "héllo" || *first[0].MessageAttributes["message-id"].StringValue != "m-1" ||
		first[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("first receive %+v", first)
	}
	if again := receive(t, cl, q, 10, 30); len(again) != 0 {
		t.Fatalf("an invisible message was received again: %+v", again)
	}
	if _, err := cl.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{QueueUrl: &q,
		ReceiptHandle: first[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	second := receive(t, cl, q, 10, 30)
	if len(second) != 1 || second[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("second receive %+v", second)
	}
	del := func(h *string) {
		out, err := cl.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: &q,
			Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: h}}})
		if err != nil || len(out.Successful) != 1 {
			t.Fatalf("DeleteMessageBatch: %+v, %v", out, err)
		}
	}
	del(first[0].ReceiptHandle) // stale: succeeds, deletes nothing
	if n := approximate(t, cl, q); n != 1 {
		t.Fatalf("%d messages after a stale delete, want 1", n)
	}
	del(second[0].ReceiptHandle)
	if n := approximate(t, cl, q); n != 0 {
		t.Fatalf("%d messages after the delete, want 0", n)
	}
}

func approximate(t *testing.T, cl *awssqs.Client, q string) int {
	t.Helper()
	out, err := cl.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{QueueUrl: &q,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return a + b
}

// A long poll returns as soon as a message is sent.
func TestLongPollWakesOnSend(t *testing.T) {
	t.Parallel()
	_, cl := newClient(t)
	q := createQueue(t, cl, "wake", nil)
	got := make(chan int, 1)
	go func() {
		out, err := cl.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: &q, WaitTimeSeconds: 20})
		if err != nil {
			got <- -1
			return
		}
		got <- len(out.Messages)
	}()
	start := time.Now()
	if _, err := cl.SendMessage(context.Background(), &awssqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n != 1 {
			t.Fatalf("long poll returned %d messages", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("long poll still waiting %v after the send", time.Since(start))
	}
}

// A FIFO queue drops a re-send with the same deduplication id and holds a
// message group while one of its messages is in flight.
func TestFIFO(t *testing.T) {
	t.Parallel()
	_, cl := newClient(t)
	ctx := context.Background()
	q := createQueue(t, cl, "orders.fifo", map[string]string{"FifoQueue": "true"})
	send := func(dedup, group string) string {
		out, err := cl.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(dedup),
			MessageDeduplicationId: &dedup, MessageGroupId: &group})
		if err != nil {
			t.Fatal(err)
		}
		return *out.MessageId
	}
	a := send("a", "g1")
	if again := send("a", "g1"); again != a {
		t.Errorf("re-send got message id %s, want %s", again, a)
	}
	send("b", "g1")
	send("c", "g2")
	first := receive(t, cl, q, 1, 30)
	if len(first) != 1 || *first[0].Body != "a" || first[0].Attributes["MessageDeduplicationId"] != "a" {
		t.Fatalf("first receive %+v, want a", first)
	}
	next := receive(t, cl, q, 10, 30)
	if len(next) != 1 || *next[0].Body != "c" {
		t.Fatalf("received %d messages, want c only (b waits for a, in flight in its group)", len(next))
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	srv, cl := newClient(t)
	ctx := context.Background()
	_, err := cl.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Errorf("GetQueueUrl of a missing queue: %v, want QueueDoesNotExist", err)
	}
	q := createQueue(t, cl, "faults", map[string]string{"MessageRetentionPeriod": "60"})
	var entries []types.SendMessageBatchRequestEntry
	for i := range 11 {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("x")})
	}
	_, err = cl.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: &q, Entries: entries})
	var tooMany *types.TooManyEntriesInBatchRequest
	if !errors.As(err, &tooMany) {
		t.Errorf("11 entries: %v, want TooManyEntriesInBatchRequest", err)
	}
	srv.FailNext("SendMessage", 5)
	if _, err := cl.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("x")}); err == nil {
		t.Error("SendMessage succeeded despite the injected faults")
	}
	out, err := cl.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: &q,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMessageRetentionPeriod}})
	if err != nil || out.Attributes["MessageRetentionPeriod"] != "60" {
		t.Errorf("MessageRetentionPeriod: %v, %v", out, err)
	}
}
