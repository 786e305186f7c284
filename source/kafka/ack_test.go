package kafka_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runtest"
)

// TestOffsetCommitsReportAcks checks that the offset commits reach the
// inbox's AckHooks: the committed ones cover every record consumed exactly
// once (duplicates included), a failed commit is reported with its error,
// and each names the topic and the scope.
func TestOffsetCommitsReportAcks(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	f := newFixture(t, c, 3)
	all := ids("ack", 150)
	f.produce(all, 3)
	f.produce(all[:50], 3) // re-sent: duplicates, consumed and acked too
	const records = 200
	// The first two offset commits fail; their offsets stay pending and
	// the next commit covers them.
	h := f.c.fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: f.group, Count: 2})

	hook := &runtest.AckRecorder{}
	cfg := f.consumerConfig()
	cfg.Inbox.Hooks = []txinbox.Hook{hook}
	cfg.Inbox.MaxBatchSize = 20
	r := f.start(cfg)
	waitHits(t, h, 2)
	f.waitCommitted(30 * time.Second)
	r.stop()
	f.checkExactlyOnce(all)

	acks := hook.Acks()
	committed, failed := 0, 0
	for _, a := range acks {
		if a.Scope != f.group || a.Source != f.topic || a.Duration <= 0 || a.Messages < 0 {
			t.Errorf("ack %+v: want scope %s, source %s, a duration and messages >= 0", a, f.group, f.topic)
		}
		if a.Err != nil {
			failed++
			continue
		}
		committed += a.Messages
	}
	if committed != records {
		t.Errorf("committed acks cover %d messages, want %d (acks %+v)", committed, records, acks)
	}
	if failed == 0 {
		t.Errorf("no failed ack reported after two failed offset commits (acks %+v)", acks)
	}
}
