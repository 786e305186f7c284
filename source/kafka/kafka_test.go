package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/kafka"
)

// TestCrashBetweenCommitAndOffsetCommit SIGKILLs a consumer process after
// its batch committed in the database and before the offsets reached
// Kafka. The next consumer resumes after the database watermark: every
// record has exactly one effect and none is read twice.
func TestCrashBetweenCommitAndOffsetCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec childSpec
	}{{"header-key", childSpec{}}, {"offset-key", childSpec{OffsetKey: true}}, {"offsets-as-the-inbox", childSpec{Watermark: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testCrashBetweenCommits(t, tc.spec)
		})
	}
}

func testCrashBetweenCommits(t *testing.T, spec childSpec) {
	f := newFixture(t, newCluster(t), 3)
	all := ids("crash", 600)
	f.produce(all, 3)
	spec.CrashAfterCommit = 250
	ch := f.startChildSpec(spec)
	ch.waitCrashPoint(t, 30*time.Second)
	ch.kill()
	f.waitChildSessionsGone()
	f.checkWatermarkAhead(all, 3)
	before := len(f.effects())

	cfg := f.consumerConfig()
	switch {
	case spec.OffsetKey:
		cfg.Key = kafka.OffsetKey
	case spec.Watermark:
		cfg.Key = kafka.OffsetWatermark
	}
	r := f.start(cfg)
	f.waitCommitted(30 * time.Second)
	r.stop()
	if spec.OffsetKey || spec.Watermark {
		f.checkExactlyOnce(f.offsetKeys(all, 3))
	} else {
		f.checkExactlyOnce(all)
	}
	st := r.c.Stats()
	if st.Resumed == 0 || st.Duplicates != 0 || st.Processed != int64(len(all)-before) {
		t.Errorf("after the crash: %+v, want resumed partitions, no duplicates and %d processed", st, len(all)-before)
	}
}

// TestCrashAfterTheLastCommit SIGKILLs a consumer after the topic's last
// batch committed in the database and before its offsets reached Kafka. No
// record is left to fetch, so nothing but the resume itself can commit the
// offsets up to the watermarks: the next consumer must, while idle (a
// consumer that waited for new records left the group's lag at the crash).
func TestCrashAfterTheLastCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newCluster(t), 3)
	all := ids("last", 300)
	f.produce(all, 3)
	ch := f.startChildSpec(childSpec{CrashAfterCommit: len(all)})
	ch.waitCrashPoint(t, 30*time.Second)
	ch.kill()
	f.waitChildSessionsGone()
	f.checkWatermarkAhead(all, 3)

	r := f.start(f.consumerConfig())
	f.waitCommitted(30 * time.Second)
	r.stop()
	f.checkExactlyOnce(all)
	if st := r.c.Stats(); st.Resumed == 0 || st.Processed != 0 || st.Duplicates != 0 {
		t.Errorf("after the crash: %+v, want resumed partitions and no record read again", st)
	}
}

// checkWatermarkAhead fails unless some partition's database watermark is
// ahead of its committed offset: the crash hit between the two commits.
func (f *fixture) checkWatermarkAhead(all []string, partitions int32) {
	f.t.Helper()
	wms, err := f.driver.Checkpoints(context.Background(), f.group, f.topic)
	if err != nil {
		f.t.Fatal(err)
	}
	lag, err := f.lag()
	if err != nil {
		f.t.Fatal(err)
	}
	ends := map[int32]int64{}
	for _, id := range all {
		ends[partitionOf(id, partitions)]++
	}
	for part, wm := range wms {
		if committed := ends[part] - lag[part]; committed < wm+1 {
			return
		}
	}
	f.t.Fatalf("no offset commit is behind the database watermark %v (lag %v): the crash came too late", wms, lag)
}

// TestTopicCreatedAgain deletes a consumed topic and creates it again: the
// old watermarks lie past the new partitions' ends and are ignored, so the
// new records are processed and their offsets committed.
func TestTopicCreatedAgain(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	f := newFixture(t, c, 2)
	first := ids("old", 200)
	f.produce(first, 2)
	r := f.start(f.consumerConfig())
	f.waitCommitted(30 * time.Second)
	r.stop()
	if err := c.fake.DeleteTopic(f.topic); err != nil {
		t.Fatal(err)
	}
	if err := c.fake.CreateTopic(f.topic, 2, nil); err != nil {
		t.Fatal(err)
	}
	second := ids("new", 40)
	f.newProducer() // the old one knows the deleted topic's id
	f.produce(second, 2)
	r = f.start(f.consumerConfig())
	f.waitCommitted(30 * time.Second)
	r.stop()
	f.checkExactlyOnce(append(first, second...))
	if st := r.c.Stats(); st.Resumed != 0 || st.Processed != int64(len(second)) {
		t.Errorf("stats %+v: want no resume and %d processed", st, len(second))
	}
}

// TestThreeProcessesJoinLeaveKill runs consumer processes of one group that
// join, leave and get SIGKILLed while records (a quarter of them re-sent at
// new offsets) are produced, twice over; with header keys (a re-send is a
// duplicate) and with offsets as the inbox (a re-send is a new record).
func TestThreeProcessesJoinLeaveKill(t *testing.T) {
	t.Parallel()
	for _, watermark := range []bool{false, true} {
		t.Run(map[bool]string{false: "header-key", true: "offsets-as-the-inbox"}[watermark], func(t *testing.T) {
			t.Parallel()
			testJoinLeaveKill(t, watermark)
		})
	}
}

func testJoinLeaveKill(t *testing.T, watermark bool) {
	const partitions = 6
	f := newFixture(t, newCluster(t), partitions)
	var unique, all []string
	produced := 0
	next := func() {
		batch := ids(fmt.Sprint("grp", produced), 400)
		produced++
		resend := unique[:min(len(unique), 100)]
		unique = append(unique, batch...)
		all = append(all, append(batch, resend...)...)
		f.produce(append(batch, resend...), partitions)
		// Wait until the group is consuming the new records: the next
		// step happens mid-stream.
		want := len(unique) - 300
		waitFor(t, 60*time.Second, "progress", func() (bool, string) {
			n := len(f.effects())
			return n >= want, fmt.Sprintf("%d effects, want %d", n, want)
		})
	}
	start := func() *child { return f.startChildSpec(childSpec{Watermark: watermark}) }
	for range 2 {
		a, b := start(), start()
		next()
		c := start()
		next()
		b.kill() // SIGKILL mid-stream
		next()
		a.stop(t) // leaves the group
		next()
		c.stop(t)
	}
	last := start()
	f.waitCommitted(60 * time.Second)
	last.stop(t)
	if watermark {
		f.checkExactlyOnce(f.offsetKeys(all, partitions))
	} else {
		f.checkExactlyOnce(unique)
	}
}

// TestRetryKeepsPartitionOrder fails one record twice: its partition
// pauses and rewinds, the later records of the partition wait for it, the
// other partitions go on, and every effect lands once, in offset order.
func TestRetryKeepsPartitionOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newCluster(t), 2)
	all := ids("order", 300)
	f.produce(all, 2)
	victim := all[40]
	var mu sync.Mutex
	failures := 0
	cfg := f.consumerConfig()
	cfg.Inbox.Handler = func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		if m.ID == victim {
			mu.Lock()
			defer mu.Unlock()
			if failures < 2 {
				failures++
				return errors.New("flaky partner system")
			}
		}
		return insertEffect(ctx, tx, m)
	}
	r := f.start(cfg)
	f.waitCommitted(30 * time.Second)
	r.stop()
	f.checkExactlyOnce(all)
	if st := r.c.Stats(); st.Retries < 2 || st.Rewinds < 2 {
		t.Errorf("stats %+v: want at least 2 retries and rewinds", st)
	}
	rows, _ := f.pool.Query(context.Background(), `SELECT part, off FROM effects ORDER BY seq`)
	last := map[int]int64{}
	var part int
	var off int64
	if _, err := pgx.ForEachRow(rows, []any{&part, &off}, func() error {
		if prev, ok := last[part]; ok && off <= prev {
			return fmt.Errorf("partition %d: offset %d committed after %d", part, off, prev)
		}
		last[part] = off
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// TestDeadLetterTopic dead-letters a record that fails permanently and a
// record without the key header: both are copied to the dead-letter topic
// with the error in their headers, the other records are processed, and
// every offset is committed.
func TestDeadLetterTopic(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newCluster(t), 1)
	dlt := f.topic + "-dlt"
	if _, err := f.adm.CreateTopic(context.Background(), 1, -1, nil, dlt); err != nil {
		t.Fatal(err)
	}
	all := ids("dl", 50)
	f.produce(all, 1)
	noID := &kgo.Record{Topic: f.topic, Value: []byte("no id")}
	if err := f.cl.ProduceSync(context.Background(), noID).FirstErr(); err != nil {
		t.Fatal(err)
	}
	poison := all[7]
	cfg := f.consumerConfig()
	cfg.DeadLetterTopic = dlt
	cfg.Inbox.Handler = func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		if m.ID == poison {
			return txinbox.Permanent(errors.New("unknown partner"))
		}
		return insertEffect(ctx, tx, m)
	}
	r := f.start(cfg)
	f.waitCommitted(30 * time.Second)
	r.stop()
	f.checkExactlyOnce(append(all[:7:7], all[8:]...))

	dls := f.recordHeaders(dlt, 2)
	if h := dls[0]; h["message-id"] != poison || !strings.Contains(h["txinbox-error"], "unknown partner") ||
		h["txinbox-topic"] != f.topic || h["txinbox-offset"] != "7" {
		t.Errorf("dead letter of the poison record: headers %v", h)
	}
	if h := dls[1]; !strings.Contains(h["txinbox-error"], txinbox.ErrNoMessageID.Error()) || h["txinbox-offset"] != "50" {
		t.Errorf("dead letter of the record without an id: headers %v", h)
	}
	// The records after the poison one were held back (Retry) in its
	// batch and fetched again: the record without an id, dead-lettered in
	// that batch beyond the Retry, is dead-lettered again when fetched
	// again, and copied to the topic once, from the acked prefix.
	if st := r.c.Stats(); st.DeadLettered < 2 || st.DeadLettersProduced != 2 {
		t.Errorf("stats %+v: want 2 dead letters produced", st)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := kafka.Config{Seeds: []string{"x:9092"}, Topics: []string{"t"}, Group: "g"}
	proc := newProcessor(t, txinbox.Config[pgx.Tx]{Scope: "g", Ordered: true, Handler: insertEffect})
	for _, tc := range []struct {
		field string
		edit  func(*kafka.Config)
	}{
		{"Seeds", func(c *kafka.Config) { c.Seeds = nil }},
		{"Topics", func(c *kafka.Config) { c.Topics = nil }},
		{"Topics", func(c *kafka.Config) { c.DeadLetterTopic = "t" }},
		{"Group", func(c *kafka.Config) { c.Group = "" }},
		{"MaxPollRecords", func(c *kafka.Config) { c.MaxPollRecords = -1 }},
		{"Concurrency", func(c *kafka.Config) { c.Concurrency = -1 }},
		{"CommitTimeout", func(c *kafka.Config) { c.CommitTimeout = -1 }},
	} {
		cfg := ok
		tc.edit(&cfg)
		_, err := kafka.New(proc, cfg)
		var ce *txinbox.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.HasPrefix(err.Error(), "kafka: ") {
			t.Errorf("%s: err = %v, want a ConfigError on %s", tc.field, err, tc.field)
		}
	}
	unordered := newProcessor(t, txinbox.Config[pgx.Tx]{Scope: "g", Handler: insertEffect})
	var ce *txinbox.ConfigError
	if _, err := kafka.New(unordered, ok); !errors.As(err, &ce) || ce.Field != "Ordered" {
		t.Errorf("a processor without Ordered: err = %v, want a ConfigError on Ordered", err)
	}
	if _, err := kafka.New(nil, ok); err == nil {
		t.Error("a nil processor was accepted")
	}
	if _, err := kafka.New(proc, ok); err != nil {
		t.Errorf("a valid config was refused: %v", err)
	}
}

// newProcessor builds a processor of cfg over a driver that is never
// called (the consumers built with it never run).
func newProcessor(t *testing.T, cfg txinbox.Config[pgx.Tx]) *txinbox.Processor[pgx.Tx] {
	t.Helper()
	proc, err := txinbox.NewProcessor(nopDriver{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return proc
}

// recordHeaders reads the n records of a topic and returns their headers.
func (f *fixture) recordHeaders(topic string, n int) []map[string]string {
	f.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.c.seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		f.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []map[string]string
	for len(out) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			m := map[string]string{}
			for _, h := range r.Headers {
				m[h.Key] = string(h.Value)
			}
			out = append(out, m)
		})
	}
	if len(out) != n {
		f.t.Fatalf("%s holds %d records, want %d", topic, len(out), n)
	}
	return out
}

// TestJoined: a consumer reports group membership only while Run's client
// is in the group: not before Run, yes once it consumed, not after Run.
func TestJoined(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newCluster(t), 2)
	all := ids("joined", 20)
	f.produce(all, 2)
	idle, err := newConsumer(f.driver, f.consumerConfig())
	if err != nil {
		t.Fatal(err)
	}
	if idle.Joined() {
		t.Error("a consumer that never ran reports Joined")
	}
	r := f.start(f.consumerConfig())
	f.waitCommitted(30 * time.Second)
	if !r.c.Joined() {
		t.Error("a consumer that committed offsets does not report Joined")
	}
	r.stop()
	if r.c.Joined() {
		t.Error("a stopped consumer reports Joined")
	}
}
