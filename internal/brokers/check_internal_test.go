package brokers

import (
	"strings"
	"testing"
)

// TestCheckRefusesAShortAddressLine: an address line without what was
// asked for (an older txinbox-brokers) is an error, not an empty seed
// list that a caller indexes.
func TestCheckRefusesAShortAddressLine(t *testing.T) {
	for _, tc := range []struct {
		r    Running
		o    Options
		want string
	}{
		{Running{}, Options{Kafka: 3}, "0 Kafka seeds for 3"},
		{Running{KafkaSeeds: []string{"a"}}, Options{Kafka: 1, NATS: true}, "no NATS URL"},
		{Running{}, Options{SQS: true}, "no SQS endpoint"},
	} {
		if err := tc.r.check(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("check(%+v) of %+v = %v, want %q", tc.o, tc.r, err, tc.want)
		}
	}
	full := Running{KafkaSeeds: []string{"a", "b"}, NATSURL: "nats://x", SQSEndpoint: "http://y"}
	if err := full.check(Options{Kafka: 2, NATS: true, SQS: true}); err != nil {
		t.Errorf("a complete line: %v", err)
	}
}
