package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/kafka"
)

// TestDeadLetterTopicBeforeWatermark dead-letters a record with offsets as
// the inbox while the first produce to the dead-letter topic fails. The
// watermark must not move past the record before its copy reached the
// topic: had it moved first, the record would be known done when fetched
// again (or after a crash between the two) and its copy never produced.
func TestDeadLetterTopicBeforeWatermark(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	f := newFixture(t, c, 1)
	dlt := f.topic + "-dlt"
	if _, err := f.adm.CreateTopic(context.Background(), 1, -1, nil, dlt); err != nil {
		t.Fatal(err)
	}
	all := ids("dlw", 40)
	f.produce(all, 1)
	faults := c.fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: dlt, Err: kerr.InvalidRecord, Count: 1})
	defer faults.Remove()
	cfg := f.consumerConfig()
	cfg.Key, cfg.DeadLetterTopic = kafka.OffsetWatermark, dlt
	keys := f.offsetKeys(all, 1)
	poison := keys[7]
	cfg.Inbox.Handler = func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		if m.ID == poison {
			return txinbox.Permanent(errors.New("unknown partner"))
		}
		return insertEffect(ctx, tx, m)
	}
	r := f.start(cfg)
	f.waitCommitted(30 * time.Second)
	waitFor(t, 10*time.Second, "the dead-letter topic's copy", func() (bool, string) {
		st := r.c.Stats()
		return st.DeadLettersProduced >= 1, "no copy produced"
	})
	r.stop()
	if faults.Hits() == 0 {
		t.Fatal("the fault on the dead-letter topic's produce was never hit")
	}
	f.checkExactlyOnce(append(keys[:7:7], keys[8:]...))
	// At least once: the produce the fault answered may have been
	// written all the same.
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.c.seeds...), kgo.ConsumeTopics(dlt), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Read the whole topic, to its end offset: a fixed 2 s of polling
	// could end, under load, before the first fetch.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := f.adm.ListEndOffsets(ctx, dlt)
	if err == nil {
		err = ends.Error()
	}
	end, _ := ends.Lookup(dlt, 0)
	if err != nil || end.Offset == 0 {
		t.Fatalf("the dead-letter topic ends at %d (%v): no copy of the poison record", end.Offset, err)
	}
	copies := 0
	for int64(copies) < end.Offset && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			copies++
			if string(r.Value) != "payload of "+all[7] {
				t.Errorf("the dead-letter topic holds %q, want the poison record's copies only", r.Value)
			}
		})
	}
	if int64(copies) < end.Offset {
		t.Errorf("read %d of the dead-letter topic's %d records in a minute", copies, end.Offset)
	}
}
