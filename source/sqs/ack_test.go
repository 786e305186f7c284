package sqs_test

import (
	"fmt"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runtest"
	"github.com/txinbox/txinbox/source/sqs"
)

// The DeleteMessageBatch calls after the commits reach the inbox's
// AckHooks: the successful ones cover every message deleted, a failed one
// is reported with its error and the size of its chunk.
func TestDeletesReachAckHooks(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	const n = 25
	for i := range n {
		f.send(fmt.Sprintf(`{"invoice":"INV-%02d"}`, i))
	}
	f.fake.FailNext("DeleteMessageBatch", 3) // the SDK tries three times: one failed delete
	hook := &runtest.AckRecorder{}
	cfg := f.config(insertEffect)
	cfg.Inbox.Hooks = []txinbox.Hook{hook}
	cs := f.run(func(s sqs.Stats) bool { return s.Deleted == n }, cfg)
	s := cs[0].Stats()
	if s.Processed != n || s.DeleteErrors == 0 || s.Duplicates != s.DeleteErrors {
		t.Fatalf("stats %+v: want %d processed, delete errors, each undeleted message back as a duplicate", s, n)
	}
	acks := hook.Acks()
	deleted, failed := 0, 0
	for _, a := range acks {
		if a.Scope != "sqs-test" || a.Source != f.queueURL || a.Messages < 0 || a.Messages > 10 {
			t.Errorf("ack %+v: want scope sqs-test, source %s, at most 10 messages", a, f.queueURL)
		}
		if a.Err != nil {
			failed += a.Messages
			continue
		}
		deleted += a.Messages
	}
	if deleted != n || int64(failed) != s.DeleteErrors {
		t.Errorf("acks: %d deleted, %d failed; want %d and %d (acks %+v)", deleted, failed, n, s.DeleteErrors, acks)
	}
}
