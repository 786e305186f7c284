package jetstream_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runtest"
	"github.com/txinbox/txinbox/source/jetstream"
	"github.com/txinbox/txinbox/source/sourcetest"
)

// The acks after the commits reach the inbox's AckHooks (through the
// shared runner): one per message, covering every message consumed, each
// naming the stream and the scope.
func TestAcksReachAckHooks(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t)
	const n = 30
	msgs := make([]sourcetest.Message, n)
	for i := range msgs {
		msgs[i] = sourcetest.Message{ID: fmt.Sprintf("ack-%02d", i), Body: []byte("x")}
	}
	if err := f.b.Publish(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	hook := &runtest.AckRecorder{}
	cfg := f.config(insertEffect)
	cfg.Inbox.Hooks = []txinbox.Hook{hook}
	s := f.run(cfg, func(s jetstream.Stats) bool { return s.Acked == n })
	if s.Processed != n {
		t.Fatalf("stats %+v, want %d processed", s, n)
	}
	acks := hook.Acks()
	sum := 0
	for _, a := range acks {
		if a.Err != nil || a.Scope != "test" || a.Source != f.b.Stream || a.Messages != 1 || a.Duration <= 0 {
			t.Errorf("ack %+v: want scope test, source %s, one message, a duration, no error", a, f.b.Stream)
		}
		sum += a.Messages
	}
	if sum != n {
		t.Errorf("acks cover %d messages, want %d", sum, n)
	}
}
