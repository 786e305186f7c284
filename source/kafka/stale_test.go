package kafka_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/txinbox/txinbox/source/kafka"
)

// logRecords is a slog.Handler that keeps the records it handles, with
// their attributes as text.
type logRecords struct {
	mu   sync.Mutex
	recs []logRecord
}

type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, rec)
	return nil
}

func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

// warnings returns the Warn records whose message contains substr.
func (h *logRecords) warnings(substr string) []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logRecord
	for _, r := range h.recs {
		if r.level == slog.LevelWarn && strings.Contains(r.msg, substr) {
			out = append(out, r)
		}
	}
	return out
}

// consumeAll runs a consumer of cfg (offsets as the inbox) until every
// offset is committed, with its log kept, and returns the log and the
// consumer's Stats.
func (f *fixture) consumeAll(cfg consumerConfig) (*logRecords, kafka.Stats) {
	f.t.Helper()
	log := &logRecords{}
	cfg.Key = kafka.OffsetWatermark
	cfg.Logger = slog.New(log)
	r := f.start(cfg)
	f.waitCommitted(30 * time.Second)
	r.stop()
	return log, r.c.Stats()
}

// moveToNewCluster points the fixture at a fresh kfake cluster with its
// topic (same name, partitions) and group name: a development loop's
// restart of the broker, the database kept.
func (f *fixture) moveToNewCluster(partitions int32) {
	f.t.Helper()
	f.c = newCluster(f.t)
	f.newProducer()
	if _, err := f.adm.CreateTopic(context.Background(), partitions, -1, nil, f.topic); err != nil {
		f.t.Fatal(err)
	}
}

// checkFix fails unless rec names the partition, the watermark and the
// statement that deletes the topic's watermarks (partition 0's alone when
// onePartition).
func (f *fixture) checkFix(rec logRecord, watermark int64, onePartition bool) {
	f.t.Helper()
	fix := fmt.Sprintf("DELETE FROM txinbox_checkpoints WHERE scope = '%s' AND source = '%s'", f.group, f.topic)
	if onePartition {
		fix += " AND partition = '0'"
	}
	if rec.attrs["topic"] != f.topic || rec.attrs["partition"] != "0" || rec.attrs["watermark"] != fmt.Sprint(watermark) ||
		rec.attrs["fix"] != fix {
		f.t.Errorf("warning %q %v: want topic %s, partition 0, watermark %d and fix %q", rec.msg, rec.attrs, f.topic, watermark, fix)
	}
}

// TestStaleWatermarkNewCluster is the development loop: the same database,
// topic and group against a fresh broker. The watermark saved against the
// old one (5) is past the new topic's end, or within it; either way the
// consumer warns with the statement that deletes it.
func TestStaleWatermarkNewCluster(t *testing.T) {
	t.Parallel()
	t.Run("within-the-new-topic", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newCluster(t), 1)
		f.produce(ids("old", 6), 1)
		f.consumeAll(f.consumerConfig())
		f.moveToNewCluster(1)
		f.produce(ids("new", 8), 1)
		log, st := f.consumeAll(f.consumerConfig())
		warned := log.warnings("no committed offset")
		if len(warned) != 1 {
			t.Fatalf("%d warnings of a watermark the group never committed, want 1", len(warned))
		}
		f.checkFix(warned[0], 5, true)
		if st.Processed != 2 || st.Duplicates != 0 {
			t.Errorf("stats %+v: want the 2 records past the watermark processed (it is taken, with the warning)", st)
		}
	})
	t.Run("past-the-new-topic", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newCluster(t), 1)
		f.produce(ids("old", 6), 1)
		f.consumeAll(f.consumerConfig())
		f.moveToNewCluster(1)
		f.produce(ids("new", 3), 1)
		cfg := f.consumerConfig() // header keys: the watermark is ignored and the records processed
		log := &logRecords{}
		cfg.Logger = slog.New(log)
		r := f.start(cfg)
		f.waitCommitted(30 * time.Second)
		r.stop()
		warned := log.warnings("ignoring a database watermark")
		if len(warned) == 0 {
			t.Fatal("no warning of the watermark past the new topic's end")
		}
		f.checkFix(warned[0], 5, false)
		if st := r.c.Stats(); st.Processed != 3 {
			t.Errorf("processed %d records, want the new topic's 3", st.Processed)
		}
	})
}

// TestExpiredOffsetsNotReprocessed deletes the group's committed offsets
// on the same cluster, as offsets.retention.minutes does to an empty
// group: the watermark is within the topic and the group has no committed
// offset, as in the development loop, but nothing may run again. When the
// records up to the watermark were deleted by retention (log start past
// it), the topic is not new and there is nothing to warn of.
func TestExpiredOffsetsNotReprocessed(t *testing.T) {
	t.Parallel()
	for _, deleted := range []bool{false, true} {
		t.Run(map[bool]string{false: "log-kept", true: "log-deleted"}[deleted], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, newCluster(t), 1)
			first := ids("old", 6)
			f.produce(first, 1)
			f.consumeAll(f.consumerConfig())
			ctx := context.Background()
			if _, err := f.adm.DeleteGroup(ctx, f.group); err != nil {
				t.Fatalf("deleting the group's offsets: %v", err)
			}
			if deleted {
				var o kadm.Offsets
				o.Add(kadm.Offset{Topic: f.topic, Partition: 0, At: 6})
				if _, err := f.adm.DeleteRecords(ctx, o); err != nil {
					t.Fatalf("deleting the records: %v", err)
				}
			}
			second := ids("later", 2)
			f.produce(second, 1)
			log, st := f.consumeAll(f.consumerConfig())
			if st.Resumed != 1 || st.Processed != 2 || st.Duplicates != 0 {
				t.Errorf("stats %+v: want a resume after the watermark, the 2 records produced after the offsets expired "+
					"processed and none read again", st)
			}
			f.checkExactlyOnce(f.offsetKeys(append(first, second...), 1))
			if warned := log.warnings("no committed offset"); len(warned) != map[bool]int{false: 1, true: 0}[deleted] {
				t.Errorf("%d warnings of a watermark the group never committed, want %d", len(warned), map[bool]int{false: 1, true: 0}[deleted])
			}
		})
	}
}
