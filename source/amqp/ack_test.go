package amqp_test

import (
	"fmt"
	"testing"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/amqp"
	"github.com/txinbox/txinbox/source/internal/runtest"
)

// The acks after the commits (multiple-acks of whole batches here) reach
// the inbox's AckHooks and cover every delivery consumed, each naming the
// queue and the scope.
func TestAcksReachAckHooks(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	const n = 60
	var ps []amqp091.Publishing
	for i := range n {
		ps = append(ps, amqp091.Publishing{MessageId: fmt.Sprintf("m-%03d", i), Body: []byte("x")})
	}
	f.publish(ps...)
	hook := &runtest.AckRecorder{}
	cfg := f.config()
	cfg.Inbox.MaxBatchSize = 25
	cfg.Inbox.Hooks = []txinbox.Hook{hook}
	s := f.run(cfg, func(s amqp.Stats) bool { return s.Acked == n })
	acks := hook.Acks()
	sum, multiple := 0, 0
	for _, a := range acks {
		if a.Err != nil || a.Scope != f.b.Queue || a.Source != f.b.Queue || a.Messages < 1 {
			t.Errorf("ack %+v: want scope and source %s, messages, no error", a, f.b.Queue)
		}
		if a.Messages > 1 {
			multiple++
		}
		sum += a.Messages
	}
	if sum != n || multiple == 0 {
		t.Errorf("acks cover %d messages, %d of them acks of several; want %d and some (stats %+v)", sum, multiple, n, s)
	}
}
