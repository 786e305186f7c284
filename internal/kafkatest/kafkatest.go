// Package kafkatest holds helpers for tests that consume from a Kafka
// cluster through a consumer group: kfake in the test process, or a real
// Apache Kafka that .ci/start-kafka started and TXINBOX_TEST_KAFKA_BROKERS names
// (see Brokers), whose own command-line tools Tool runs.
package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// AwaitOffset waits until group committed offset want of topic's
// partition, and fails the test when done yields first (the consumer
// under test ended) or 30 s pass.
func AwaitOffset(t testing.TB, adm *kadm.Client, group, topic string, partition int32, want int64, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for {
		offsets, err := adm.FetchOffsets(ctx, group)
		if o, ok := offsets.Lookup(topic, partition); err == nil && ok && o.At == want {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the consumer ended before the offset of %s/%d reached %d: %v", topic, partition, want, err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the offset of group %s on %s/%d did not reach %d within 30s", group, topic, partition, want)
		}
	}
}
