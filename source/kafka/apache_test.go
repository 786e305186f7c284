package kafka_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/internal/kafkatest"
)

// TestApacheKafkaRebalanceUnderLoad runs three consumer processes of one
// group on the real Apache Kafka (TXINBOX_TEST_KAFKA_BROKERS) while records are
// produced without pause (a quarter of each batch re-sent at new offsets),
// SIGKILLs a member and starts its replacement as soon as the group made
// processed everything produced before the kill, five times (two members
// at once the last time), then four times 300ms apart (faster than the
// session timeout), then stops them: 0 doubled, 0 lost effects,
// and Kafka's own tools (the consumer-groups and get-offsets tools of the
// same jars) find every offset committed up to the topic's end. Both group
// protocols franz-go offers: classic (the client assigns) and KIP-848's
// consumer protocol (the broker assigns).
func TestApacheKafkaRebalanceUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		name       string
		serverSide bool
	}{{"classic", false}, {"consumer", true}} {
		t.Run(tc.name, func(t *testing.T) {
			testRebalanceUnderLoad(t, newRealCluster(t, tc.serverSide))
		})
	}
}

func testRebalanceUnderLoad(t *testing.T, c *cluster) {
	const partitions, kills = 6, 5
	f := newFixture(t, c, partitions)
	if c.serverSide {
		// KIP-848: the session timeout is the group's, set by the
		// operator's tool (the broker's default here is 6 s, Kafka's 45 s).
		kafkatest.Tool(t, "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", c.seeds[0],
			"--entity-type", "groups", "--entity-name", f.group, "--alter",
			"--add-config", "consumer.session.timeout.ms=2000,consumer.heartbeat.interval.ms=500")
	}
	p := f.startLoad(partitions)
	members := []*child{f.startChildSpec(childSpec{}), f.startChildSpec(childSpec{}), f.startChildSpec(childSpec{})}
	waitFor(t, 60*time.Second, "the first records processed", func() (bool, string) {
		n := len(f.effects())
		return n >= 400, fmt.Sprintf("%d effects", n)
	})
	for i := range kills {
		// SIGKILL one member (two at once in the last round) and start
		// the replacements; the next kill comes once every record
		// produced before this one has its effect: the coordinator saw
		// the dead members' sessions expire and gave their partitions to
		// the living, which is as fast as a group can lose members and
		// lose nothing.
		before := p.uniqueSoFar()
		victims := []int{i % 3}
		if i == kills-1 {
			victims = append(victims, (i+1)%3)
		}
		t0 := time.Now()
		for _, v := range victims {
			members[v].kill()
		}
		for _, v := range victims {
			members[v] = f.startChildSpec(childSpec{})
		}
		waitFor(t, 60*time.Second, "every record produced before the kill processed", func() (bool, string) {
			got := f.effects()
			for _, id := range before {
				if got[id] == 0 {
					return false, "waiting for " + id
				}
			}
			return true, ""
		})
		t.Logf("kill %d (%d members): everything produced before it processed %s later", i+1, len(victims), time.Since(t0).Round(10*time.Millisecond))
	}
	// Then faster than the session timeout: four SIGKILLs 300ms apart,
	// each of a member that joined 300ms before (replacements killed
	// before the group saw them die or even settled): kfake's
	// coordinator wedges on this; Kafka's must not.
	before := p.uniqueSoFar()
	t0 := time.Now()
	for i := range 4 {
		members[i%3].kill()
		members[i%3] = f.startChildSpec(childSpec{})
		time.Sleep(300 * time.Millisecond)
	}
	waitFor(t, 90*time.Second, "every record produced before the storm processed", func() (bool, string) {
		got := f.effects()
		for _, id := range before {
			if got[id] == 0 {
				return false, "waiting for " + id
			}
		}
		return true, ""
	})
	t.Logf("4 SIGKILLs 300ms apart: everything produced before them processed %s after the first", time.Since(t0).Round(10*time.Millisecond))
	unique, all := p.stop(t)
	f.waitCommitted(90 * time.Second)
	for _, m := range members {
		m.stop(t)
	}
	f.checkExactlyOnce(unique)
	f.auditWithKafkaTools(len(all))
}

// auditWithKafkaTools checks, with Kafka's own command-line tools, that
// the topic holds records records, that the group's committed offset of
// every partition is the partition's end (lag 0) and that the group is of
// the protocol the cluster's consumers use.
func (f *fixture) auditWithKafkaTools(records int) {
	f.t.Helper()
	out := kafkatest.Tool(f.t, "org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", f.c.seeds[0], "--topic", f.topic)
	ends := map[string]int64{}
	var total int64
	for line := range strings.Lines(out) {
		parts := strings.Split(strings.TrimSpace(line), ":") // topic:partition:offset
		if len(parts) != 3 || parts[0] != f.topic {
			continue
		}
		off, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil {
			f.t.Fatalf("GetOffsetShell: %q: %v", line, err)
		}
		ends[parts[1]] = off
		total += off
	}
	if total != int64(records) {
		f.t.Errorf("GetOffsetShell counts %d records in %s, want %d:\n%s", total, f.topic, records, out)
	}
	out = kafkatest.Tool(f.t, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
		"--bootstrap-server", f.c.seeds[0], "--describe", "--group", f.group)
	seen := 0
	for line := range strings.Lines(out) {
		// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[1] != f.topic {
			continue
		}
		seen++
		if fields[3] != strconv.FormatInt(ends[fields[2]], 10) || fields[4] != fields[3] || fields[5] != "0" {
			f.t.Errorf("kafka-consumer-groups: partition %s: committed %s, end %s, lag %s; GetOffsetShell's end %d",
				fields[2], fields[3], fields[4], fields[5], ends[fields[2]])
		}
	}
	if seen != len(ends) || seen == 0 {
		f.t.Errorf("kafka-consumer-groups described %d partitions of %s, GetOffsetShell %d:\n%s", seen, f.topic, len(ends), out)
	}
	// The group ran on the protocol the test chose, as the broker sees it.
	want := map[bool]string{false: "Classic", true: "Consumer"}[f.c.serverSide]
	out = kafkatest.Tool(f.t, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
		"--bootstrap-server", f.c.seeds[0], "--list", "--type")
	for line := range strings.Lines(out) {
		if fields := strings.Fields(line); len(fields) == 2 && fields[0] == f.group && fields[1] != want {
			f.t.Errorf("kafka-consumer-groups --list --type: group %s is %s, want %s", f.group, fields[1], want)
		}
	}
}

// load produces batches of new records, each followed by re-sends of a
// quarter as many earlier ids (at new offsets: duplicates), until stopped.
type load struct {
	mu     sync.Mutex
	unique []string
	all    []string
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

func (f *fixture) startLoad(partitions int32) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for round := 0; ctx.Err() == nil; round++ {
			batch := ids(fmt.Sprint("load", round), 200)
			l.mu.Lock()
			resend := l.unique[max(0, len(l.unique)-50):]
			recs := make([]*kgo.Record, 0, 250)
			for _, id := range append(batch, resend...) {
				recs = append(recs, &kgo.Record{Topic: f.topic, Partition: partitionOf(id, partitions),
					Value: []byte("payload of " + id), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte(id)}}})
			}
			l.mu.Unlock()
			if err := f.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				l.mu.Lock()
				l.err = err
				l.mu.Unlock()
				return
			}
			l.mu.Lock()
			l.unique = append(l.unique, batch...)
			for _, r := range recs {
				l.all = append(l.all, string(r.Headers[0].Value))
			}
			l.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	f.t.Cleanup(func() { cancel(); <-l.done })
	return l
}

func (l *load) uniqueSoFar() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unique
}

// stop ends the load and returns the unique ids and every record's id.
func (l *load) stop(t testing.TB) (unique, all []string) {
	t.Helper()
	l.cancel()
	<-l.done
	if l.err != nil {
		t.Fatalf("producing: %v", l.err)
	}
	return l.unique, l.all
}
