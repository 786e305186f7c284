package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/kafkatest"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/kafka"
)

// clusters runs test on kfake and, when one is given (or required), on
// the real Apache Kafka of TXINBOX_TEST_KAFKA_BROKERS.
func clusters(t *testing.T, test func(t *testing.T, c *cluster)) {
	t.Run("kfake", func(t *testing.T) { test(t, newCluster(t)) })
	t.Run("apache-kafka", func(t *testing.T) { test(t, newRealCluster(t, false)) })
}

// TestRedeliveryHorizonsOfTopicConfigs reads the redelivery horizon from
// the topics' real configuration: retention.ms, -1 (for ever), Kafka's
// default (7 days, the topic setting nobody wrote), and compacted topics,
// which keep the last record of every key whatever retention.ms says (a
// group whose offsets are reset reads them all again, however old), unless
// deletion applies too (cleanup.policy=compact,delete).
func TestRedeliveryHorizonsOfTopicConfigs(t *testing.T) {
	t.Parallel()
	clusters(t, func(t *testing.T, c *cluster) {
		f := newFixture(t, c, 1)
		ctx := context.Background()
		str := func(s string) *string { return &s }
		topics := []struct {
			name string
			cfg  map[string]*string
			want source.Horizon
		}{
			{"days", map[string]*string{"retention.ms": str("5184000000")},
				source.Horizon{Figure: "retention.ms=5184000000 (60d)", Within: 60 * 24 * time.Hour}},
			{"forever", map[string]*string{"retention.ms": str("-1")},
				source.Horizon{Figure: "retention.ms=-1", Forever: true}},
			{"default", nil,
				source.Horizon{Figure: "retention.ms=604800000 (7d)", Within: 7 * 24 * time.Hour}},
			{"compacted", map[string]*string{"cleanup.policy": str("compact"), "retention.ms": str("3600000")},
				source.Horizon{Figure: "cleanup.policy=compact (the last record of every key is kept for ever; retention.ms=3600000 does not apply)", Forever: true}},
			{"compacted-deleted", map[string]*string{"cleanup.policy": str("compact,delete"), "retention.ms": str("3600000")},
				source.Horizon{Figure: "retention.ms=3600000 (1h)", Within: time.Hour}},
		}
		cfg := f.consumerConfig()
		cfg.Topics = nil
		for _, tp := range topics {
			name := tp.name + "-" + f.group
			if _, err := f.adm.CreateTopic(ctx, 1, -1, tp.cfg, name); err != nil {
				t.Fatal(err)
			}
			cfg.Topics = append(cfg.Topics, name)
		}
		consumer, err := newConsumer(f.driver, cfg)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := consumer.RedeliveryHorizons(ctx)
		if err != nil || len(hs) != len(topics) {
			t.Fatalf("RedeliveryHorizons = %+v, %v; want %d horizons", hs, err, len(topics))
		}
		for i, tp := range topics {
			want := tp.want
			want.What = `Kafka topic "` + tp.name + "-" + f.group + `"`
			if hs[i] != want {
				t.Errorf("%s:\n got %+v\nwant %+v", tp.name, hs[i], want)
			}
		}
	})
}

// TestOperatorResetsOffsetsToEarliest: the group consumed a topic, then an
// operator resets its offsets to the earliest with Kafka's own tool
// (kafka-consumer-groups --reset-offsets --to-earliest --execute): nothing
// takes effect twice and the records produced after the reset take effect
// once. Kafka redelivers every record from offset 0; the inbox keeps the
// partitions' watermarks, so the consumer resumes after them (Resumed) and
// reads none of the old records again (without that resume, the inbox
// skips them: 300 duplicates with header keys, the fast path with offset
// keys). Header keys, offsets as keys and offsets as the inbox alike.
func TestOperatorResetsOffsetsToEarliest(t *testing.T) {
	for _, mode := range []struct {
		name string
		key  kafka.Key
	}{{"header-key", kafka.HeaderKey("message-id")}, {"offset-key", kafka.OffsetKey}, {"offsets-as-the-inbox", kafka.OffsetWatermark}} {
		t.Run(mode.name, func(t *testing.T) {
			c := newRealCluster(t, false)
			f := newFixture(t, c, 2)
			first := ids("before", 300)
			f.produce(first, 2)
			cfg := f.consumerConfig()
			cfg.Key = mode.key
			r := f.start(cfg)
			f.waitCommitted(30 * time.Second)
			r.stop()
			out := kafkatest.Tool(t, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", c.seeds[0],
				"--reset-offsets", "--to-earliest", "--execute", "--group", f.group, "--topic", f.topic)
			if lag, err := f.lag(); err != nil || lag[0]+lag[1] != int64(len(first)) {
				t.Fatalf("after the reset (%s): lag %v, %v; want all %d records", out, lag, err, len(first))
			}
			second := ids("after", 100)
			f.produce(second, 2)
			r = f.start(cfg)
			f.waitCommitted(30 * time.Second)
			r.stop()
			all := append(append([]string{}, first...), second...)
			if mode.name == "header-key" {
				f.checkExactlyOnce(all)
			} else {
				f.checkExactlyOnce(f.offsetKeys(all, 2))
			}
			st := r.c.Stats()
			t.Logf("after the reset: %+v", st)
			if st.Processed != int64(len(second)) || st.Resumed != 2 || st.Duplicates != 0 {
				t.Errorf("after the reset: %+v, want the %d new records processed, both partitions resumed after their watermarks, no old record read again",
					st, len(second))
			}
			f.auditWithKafkaTools(len(all))
		})
	}
}
