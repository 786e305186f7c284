package bench_test

import (
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/kafkatest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestBenchKafkaBrokers runs e2e-kafka and kafka-watermark on the run's
// kfake and on the real Apache Kafka of TXINBOX_TEST_KAFKA_BROKERS, in one run:
// the report has both, the real broker's marked, each exactly once (bench
// checks one effect per id), and the headline is kfake's.
func TestBenchKafkaBrokers(t *testing.T) {
	testdb.Require(t)
	seeds := kafkatest.RequireBrokers(t)
	var rep struct {
		Kafka   float64 `json:"e2e_kafka_msgs_per_s"`
		Results []struct {
			Name     string `json:"name"`
			Broker   string `json:"broker"`
			Messages int64  `json:"messages"`
			Effects  int64  `json:"effects"`
			Error    string `json:"error"`
		} `json:"results"`
	}
	benchJSON(t, &rep, "--only", "e2e-kafka,kafka-watermark", "--kafka-brokers", strings.Join(seeds, ","),
		"--duration", "2s", "--rounds", "1", "--kafka-records", "5000", "--duplicates", "0.3")
	seen := map[string]bool{}
	for _, r := range rep.Results {
		seen[r.Name+"/"+r.Broker] = true
		if r.Error != "" || r.Messages == 0 || r.Effects == 0 {
			t.Errorf("%s on %q: %+v", r.Name, r.Broker, r)
		}
	}
	for _, want := range []string{"e2e-kafka/", "kafka-watermark/", "e2e-kafka/apache-kafka", "kafka-watermark/apache-kafka"} {
		if !seen[want] {
			t.Errorf("no %s result: %+v", want, rep.Results)
		}
	}
	if rep.Kafka <= 0 {
		t.Errorf("no e2e-kafka headline: %+v", rep)
	}
}
