package sourcetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
)

// Run runs the conformance suite against the source that h adapts. Tests
// that need a feature the broker lacks are skipped with the reason.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		need func(Features) bool
		run  func(*fixture)
	}{
		{"NoAckBeforeCommit", redelivery, testNoAckBeforeCommit},
		{"KillBetweenCommitAndAck", redelivery, testKillAfterCommit},
		{"RetryIsRedelivered", redelivery, testRetry},
		{"PoisonDeadLettered", nil, testPoison},
		{"ConnectionLossLosesNothing", redelivery, testConnectionLoss},
		{"DatabaseOutageDeadLettersNothing", nil, testDatabaseOutage},
		{"Ordering", func(f Features) bool { return f.Ordering }, testOrdering},
		{"ConsumerGroup", func(f Features) bool { return f.ConsumerGroups }, testConsumerGroup},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.need != nil && !tc.need(h.Features) {
				t.Skipf("%s does not declare the feature this test needs", h.Name)
			}
			tc.run(newFixture(t, h))
		})
	}
	t.Run("HostileHandlers", func(t *testing.T) { testHostileHandlers(t, h) })
	t.Run("HostileInputs", func(t *testing.T) { testHostileInputs(t, h) })
}

func redelivery(f Features) bool { return f.Redelivery }

// drain runs a consumer until want acked outcomes were seen and cond (if
// set) holds, and then until the broker holds nothing unacked: a message
// whose ack was lost (a cut, a crash) comes back only after the broker's
// ack deadline. It stops the consumer and checks that nothing came back.
func (f *fixture) drain(inbox Inbox, want int, cond func() bool) {
	f.t.Helper()
	c := f.startConsumer(inbox)
	f.waitFor("acked outcomes", 40*time.Second, func() bool {
		return f.seen.acked() >= want && (cond == nil || cond())
	})
	f.waitFor("nothing pending", 30*time.Second, func() bool {
		n, err := f.broker.Pending(context.Background())
		return err == nil && n == 0
	})
	f.stop(c)
	// With a consumer running, RabbitMQ's count leaves out what the
	// consumer holds: under load the consumer could be stopped holding
	// redeliveries it had not processed yet (or a cut connection's
	// deliveries came back only now). They are pending again: consume
	// them, until every one has an acked outcome. (A count that reaches
	// 0 within wantPending's 15 s needs no new round.)
	for round := 0; round < 3; round++ {
		n := f.pendingAfterStop(15 * time.Second)
		if n <= 0 { // -1: wantPending says why
			break
		}
		before := f.seen.acked()
		c := f.startConsumer(inbox)
		f.waitFor(fmt.Sprintf("%d messages pending after the consumer stopped acked", n), 40*time.Second, func() bool {
			m, err := f.broker.Pending(context.Background())
			return f.seen.acked() >= before+n && err == nil && m == 0
		})
		f.stop(c)
	}
	f.wantPending(0)
}

// testNoAckBeforeCommit kills a consumer whose handler wrote its effect
// but whose transaction did not commit: had the source acked before the
// commit, the message would be lost.
func testNoAckBeforeCommit(f *fixture) {
	msgs, ids := messages("pre", 30)
	f.publish(msgs...)
	f.killChildAt(crashInHandler)
	f.drain(f.inbox(nil), len(msgs), nil)
	f.wantExactlyOnce(ids)
	if n := f.seen.count(txinbox.Duplicate); n != 0 {
		f.t.Errorf("%d duplicates after a crash before any commit, want 0", n)
	}
}

// testKillAfterCommit kills a consumer after its batch committed and
// before the source acked it: the redelivered batch must be skipped (or,
// with Features.ResumesAfterCommit, not delivered again).
func testKillAfterCommit(f *fixture) {
	msgs, ids := messages("post", 60)
	f.publish(msgs...)
	f.killChildAt(crashAfterCommit)
	committed := len(f.effects())
	if committed == 0 {
		f.t.Fatal("the child reached its crash point with no committed effect")
	}
	if f.h.Features.ResumesAfterCommit {
		f.drain(f.inbox(nil), len(msgs)-committed, nil)
	} else {
		f.drain(f.inbox(nil), len(msgs), func() bool { return f.seen.count(txinbox.Duplicate) >= committed })
	}
	f.wantExactlyOnce(ids)
}

// testRetry fails the first attempt of one message: it is not acked, comes
// back and commits once.
func testRetry(f *fixture) {
	msgs, ids := messages("retry", 10)
	f.publish(msgs...)
	var failed atomic.Bool
	inbox := f.inbox(func(m *txinbox.Message) error {
		if m.ID == ids[3] && failed.CompareAndSwap(false, true) {
			return errors.New("partner endpoint refused")
		}
		return nil
	})
	inbox.s.maxBatchSize = 1
	f.drain(inbox, len(msgs), nil)
	f.wantExactlyOnce(ids)
	if got := f.seen.of(ids[3]); !slices.Equal(got, []txinbox.Outcome{txinbox.Retry, txinbox.Processed}) {
		f.t.Errorf("outcomes of the failing message %v, want [retry processed]", got)
	}
}

// testPoison publishes a message without an id, one that fails
// permanently and one that fails every time: each is dead-lettered with
// its reason and acked; the good message commits.
func testPoison(f *fixture) {
	msgs := []Message{
		{ID: "good", Body: []byte("good")},
		{Body: []byte("no id")},
		{ID: "permanent", Body: []byte("permanent")},
		{ID: "always-fails", Body: []byte("always fails")},
	}
	f.publish(msgs...)
	inbox := f.inbox(func(m *txinbox.Message) error {
		switch m.ID {
		case "permanent":
			return txinbox.Permanent(errors.New("not an invoice"))
		case "always-fails":
			return errors.New("partner endpoint refused")
		}
		return nil
	})
	inbox.s.maxAttempts = 2
	f.drain(inbox, len(msgs), nil)
	f.wantExactlyOnce([]string{"good"})
	dls, err := f.db.deadLetters(context.Background(), scope)
	if err != nil {
		f.t.Fatal(err)
	}
	var got []string
	for _, dl := range dls {
		got = append(got, string(dl.Payload)+": "+dl.LastError)
	}
	slices.Sort(got)
	if len(got) != 3 || !strings.Contains(got[0], "partner endpoint refused") ||
		!strings.Contains(got[1], "no id") || !strings.Contains(got[2], "not an invoice") {
		f.t.Errorf("dead letters %q, want the 3 poison messages with their reasons", got)
	}
	if f.h.Features.DeadLetterDestination {
		f.wantBrokerDeadLetters([]byte("always fails"), []byte("no id"), []byte("permanent"))
	}
}

func (f *fixture) wantBrokerDeadLetters(want ...[]byte) {
	f.t.Helper()
	var got [][]byte
	f.waitFor("broker dead letters", 30*time.Second, func() bool {
		var err error
		got, err = f.broker.DeadLetters(context.Background())
		return err == nil && len(got) >= len(want)
	})
	slices.SortFunc(got, bytes.Compare)
	if !slices.EqualFunc(got, want, bytes.Equal) {
		f.t.Errorf("broker dead letters %q, want %q", got, want)
	}
}

// testConnectionLoss cuts the consumer's connections twice while a
// handler runs inside its transaction: the batch commits after the cut, its
// acks are lost with the connection (or sent after a reconnect), and the
// redeliveries are skipped as duplicates; nothing is lost or applied twice.
func testConnectionLoss(f *fixture) {
	msgs, ids := messages("cut", 300)
	f.publish(msgs...)
	cutAt := map[string]bool{ids[50]: true, ids[150]: true}
	blocked, release := make(chan string), make(chan struct{})
	var mu sync.Mutex
	c := f.startConsumer(f.inbox(func(m *txinbox.Message) error {
		mu.Lock()
		cut := cutAt[m.ID]
		delete(cutAt, m.ID)
		mu.Unlock()
		if cut {
			blocked <- m.ID
			<-release
		}
		return nil
	}))
	for range 2 {
		select {
		case <-blocked:
		case <-time.After(30 * time.Second):
			f.t.Fatalf("%s: no handler reached the cut point in 30s (outcomes %v)", f.h.Name, f.seen.counts())
		}
		f.broker.Interrupt()
		release <- struct{}{}
	}
	f.waitFor("every effect", 40*time.Second, func() bool { return len(f.effects()) == len(ids) })
	f.stop(c)
	f.drain(f.inbox(nil), 0, nil) // what the cut left unacked comes back
	f.wantExactlyOnce(ids)
}

// testOrdering checks that one consumer commits the effects in publish
// order.
func testOrdering(f *fixture) {
	msgs, ids := messages("ord", 100)
	f.publish(msgs...)
	f.drain(f.inbox(nil), len(msgs), nil)
	f.wantExactlyOnce(ids)
	got, err := f.db.effectOrder(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	if !slices.Equal(got, ids) {
		f.t.Errorf("effects committed out of publish order: %v", got)
	}
}

// testConsumerGroup runs two consumers on one destination: each message
// takes effect once.
func testConsumerGroup(f *fixture) {
	msgs, ids := messages("grp", 200)
	f.publish(msgs...)
	a, b := f.startConsumer(f.inbox(nil)), f.startConsumer(f.inbox(nil))
	f.waitFor("every effect", 40*time.Second, func() bool { return len(f.effects()) == len(ids) })
	f.stop(a)
	f.stop(b)
	f.drain(f.inbox(nil), 0, nil)
	f.wantExactlyOnce(ids)
}
