package sourcetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// isolationTimeout bounds each wait of the hostile tests: on a sound
// source they finish in a few seconds.
const isolationTimeout = 20 * time.Second

// hostileHandler is one way a handler can break the transaction it was
// given. Each first writes the suite's effect, so that an effect committed
// without its inbox row, or an inbox row without its effect, shows. Each
// store has its list (hostileHandlersOf), as what breaks a
// transaction differs: PostgreSQL aborts it after a failed statement,
// MySQL does not.
type hostileHandler struct {
	name string
	// reason is in the culprit's dead-letter error.
	reason string
	// processed: the store is not harmed by what the handler did, and
	// the culprit is processed like any other message (reason unused).
	processed bool
	run       handler
}

// effectThen is a hostile handler that writes the effect and then runs
// hostile, returning nil (the handler swallows what hostile returns).
func effectThen(hostile func(ctx context.Context, tx txn) error) handler {
	return func(ctx context.Context, tx txn, m *txinbox.Message) error {
		if err := tx.effect(ctx, m.ID); err != nil {
			return err
		}
		_ = hostile(ctx, tx)
		return nil
	}
}

// effectThenReturn is effectThen returning what hostile returns.
func effectThenReturn(hostile func(ctx context.Context, tx txn) error) handler {
	return func(ctx context.Context, tx txn, m *txinbox.Message) error {
		if err := tx.effect(ctx, m.ID); err != nil {
			return err
		}
		return hostile(ctx, tx)
	}
}

// withDeadline runs query under a deadline of 50 ms.
func withDeadline(query string) func(ctx context.Context, tx txn) error {
	return func(ctx context.Context, tx txn) error {
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		return tx.exec(short, query)
	}
}

// execs runs query.
func execs(query string) func(ctx context.Context, tx txn) error {
	return func(ctx context.Context, tx txn) error { return tx.exec(ctx, query) }
}

func commits(ctx context.Context, tx txn) error   { return tx.commit(ctx) }
func rollsBack(ctx context.Context, tx txn) error { return tx.rollback(ctx) }

func panics(ctx context.Context, tx txn, m *txinbox.Message) error {
	if err := tx.effect(ctx, m.ID); err != nil {
		return err
	}
	panic("sourcetest: a handler bug")
}

// testHostileHandlers runs each hostile handler as one message's handler
// among innocent ones, each case on a destination of its own.
func testHostileHandlers(t *testing.T, h Harness) {
	for _, hc := range hostileHandlersOf(h.Store) {
		t.Run(hc.name, func(t *testing.T) {
			f := newFixture(t, h)
			culprit := Message{ID: "culprit", Body: []byte("culprit " + hc.name)}
			if hc.processed {
				f.harmless(culprit, hc.run)
				return
			}
			f.isolate(culprit, hc.run, func(dl store.DeadLetterRecord) error {
				if !strings.Contains(dl.LastError, hc.reason) {
					return fmt.Errorf("last error %q does not name %q", dl.LastError, hc.reason)
				}
				return nil
			})
		})
	}
}

// hostileInput is a message whose bytes the database cannot store as they
// come (Features says which the broker carries).
type hostileInput struct {
	name    string
	need    func(Features) bool
	culprit Message
	// handler, when set, is the culprit's handler (after the effect);
	// else it is refused before any handler runs.
	handler func(*txinbox.Message) error
	check   func(store.DeadLetterRecord) error
}

// invalidID checks the dead letter of a message whose id the database
// cannot store: refused as an invalid message, the raw id kept.
func invalidID(dl store.DeadLetterRecord) error {
	if dl.Reason != "invalid message" || !strings.Contains(dl.LastError, "cannot be stored: ID") {
		return fmt.Errorf("reason %q, last error %q; want an invalid message naming its ID", dl.Reason, dl.LastError)
	}
	if !strings.Contains(string(dl.HeadersJSON), "txinbox-raw-id") {
		return fmt.Errorf("headers %s keep no raw id", dl.HeadersJSON)
	}
	return nil
}

var hostileInputs = []hostileInput{
	{name: "NULInID", need: func(f Features) bool { return f.NULInIDs },
		culprit: Message{ID: "cul\x00prit", Body: []byte("culprit NUL in id")}, check: invalidID},
	{name: "InvalidUTF8InID", need: func(f Features) bool { return f.InvalidUTF8InIDs },
		culprit: Message{ID: "cul\xff\xfeprit", Body: []byte("culprit invalid UTF-8 in id")}, check: invalidID},
	{name: "LongID", need: func(f Features) bool { return f.LongIDs },
		culprit: Message{ID: longID(5000), Body: []byte("culprit 5 kB id")}, check: invalidID},
	// Nothing in it is refused: the header matters when the message is
	// dead-lettered (a NUL cannot be stored in jsonb as text).
	{name: "NULInHeaderValue", need: func(f Features) bool { return f.BinaryHeaders },
		culprit: Message{ID: "culprit", Body: []byte("culprit NUL in header"),
			Headers: []txinbox.Header{{Key: "x-note", Value: "a\x00b"}}},
		handler: func(*txinbox.Message) error { return txinbox.Permanent(errors.New("not an invoice")) },
		check: func(dl store.DeadLetterRecord) error {
			if !strings.Contains(dl.LastError, "not an invoice") {
				return fmt.Errorf("last error %q does not name the handler's error", dl.LastError)
			}
			return nil
		}},
}

// longID returns an id of n hex digits that do not repeat (SHA-256 of a
// counter): PostgreSQL compresses a long, repetitive key until its index
// takes it, but not this one.
func longID(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%x", sha256.Sum256([]byte(strconv.Itoa(i))))
	}
	return b.String()[:n]
}

// testHostileInputs publishes each hostile input among innocent messages,
// each case on a destination of its own.
func testHostileInputs(t *testing.T, h Harness) {
	for _, hc := range hostileInputs {
		t.Run(hc.name, func(t *testing.T) {
			if !hc.need(h.Features) {
				t.Skipf("%s does not declare that its transport carries this input", h.Name)
			}
			f := newFixture(t, h)
			run := func(ctx context.Context, tx txn, m *txinbox.Message) error {
				if err := tx.effect(ctx, m.ID); err != nil {
					return err
				}
				if hc.handler != nil {
					return hc.handler(m)
				}
				return nil
			}
			f.isolate(hc.culprit, run, hc.check)
		})
	}
}

// isolate publishes four innocent messages, the culprit (handled by run)
// and four more, and once the culprit was seen four late messages; it
// checks that every innocent and late message takes effect exactly once
// and is never dead-lettered (the delivery-count guard included), that the
// culprit's effect never commits, and that the culprit is dead-lettered
// alone (in the database and, if the broker has one, its dead-letter
// destination) with a dead letter that check accepts.
func (f *fixture) isolate(culprit Message, run handler, check func(store.DeadLetterRecord) error) {
	f.t.Helper()
	all := f.runAmongInnocents(culprit, run, func() bool { return slices.Contains(f.seen.of(culprit.ID), txinbox.DeadLettered) })
	f.wantExactlyOnce(all) // the culprit's effect never committed
	for _, id := range all {
		if got := f.seen.of(id); slices.Contains(got, txinbox.DeadLettered) || slices.Contains(got, txinbox.Drift) {
			f.t.Errorf("%s: innocent %s had outcomes %v", f.h.Name, id, got)
		}
	}
	if got := f.seen.of(culprit.ID); slices.Contains(got, txinbox.Processed) {
		f.t.Errorf("%s: culprit outcomes %v, it must never be processed", f.h.Name, got)
	}
	dls, err := f.db.deadLetters(context.Background(), scope)
	if err != nil {
		f.t.Fatal(err)
	}
	if len(dls) != 1 || !bytes.Equal(dls[0].Payload, culprit.Body) {
		var got []string
		for _, dl := range dls {
			got = append(got, fmt.Sprintf("%q (%s)", dl.MessageID, dl.LastError))
		}
		f.t.Fatalf("%s: dead letters %v, want the culprit's alone", f.h.Name, got)
	}
	if err := check(dls[0]); err != nil {
		f.t.Errorf("%s: the culprit's dead letter: %v", f.h.Name, err)
	}
	if f.h.Features.DeadLetterDestination {
		f.wantBrokerDeadLetters(culprit.Body)
	}
}

// harmless is isolate for a culprit whose handler does not harm the
// store's transaction: it is processed, its effect committed once, like
// every innocent message, and nothing is dead-lettered.
func (f *fixture) harmless(culprit Message, run handler) {
	f.t.Helper()
	all := f.runAmongInnocents(culprit, run, func() bool {
		return slices.ContainsFunc(f.seen.of(culprit.ID), txinbox.Outcome.Ack)
	})
	f.wantExactlyOnce(append(all, culprit.ID))
	for _, id := range append(all, culprit.ID) {
		if got := f.seen.of(id); !slices.Equal(got, []txinbox.Outcome{txinbox.Processed}) {
			f.t.Errorf("%s: %s had outcomes %v, want [processed]", f.h.Name, id, got)
		}
	}
	dls, err := f.db.deadLetters(context.Background(), scope)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, dl := range dls {
		f.t.Errorf("%s: %q dead-lettered: %s", f.h.Name, dl.MessageID, dl.LastError)
	}
}

// runAmongInnocents publishes four innocent messages, the culprit
// (handled by run) and four more, and once the culprit was seen four late
// messages; it consumes until every innocent and late message was acked
// and culpritDone holds, and nothing is pending. It returns the innocent
// and late ids.
func (f *fixture) runAmongInnocents(culprit Message, run handler, culpritDone func() bool) []string {
	f.t.Helper()
	msgs, innocent := messages("inn", 8)
	f.publish(slices.Concat(msgs[:4], []Message{culprit}, msgs[4:])...)
	inbox := f.inbox(nil)
	inbox.s.handler = func(ctx context.Context, tx txn, m *txinbox.Message) error {
		if m.ID == culprit.ID {
			return run(ctx, tx, m)
		}
		return tx.effect(ctx, m.ID)
	}
	inbox.s.maxAttempts = 2
	c := f.startConsumer(inbox)

	// The late messages are published once the culprit had its first
	// outcome (or after a while without one: a stalled source).
	deadline := time.Now().Add(isolationTimeout / 2)
	for len(f.seen.of(culprit.ID)) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	late, lateIDs := messages("late", 4)
	f.publish(late...)
	all := slices.Concat(innocent, lateIDs)

	f.waitForIsolation("the innocent and late messages acked, the culprit done", all, culprit.ID, func() bool {
		for _, id := range all {
			if !slices.ContainsFunc(f.seen.of(id), txinbox.Outcome.Ack) {
				return false
			}
		}
		return culpritDone()
	})
	f.waitForIsolation("nothing pending", all, culprit.ID, func() bool {
		n, err := f.broker.Pending(context.Background())
		return err == nil && n == 0
	})
	f.stop(c)
	f.wantPending(0)
	return all
}

// waitForIsolation is waitFor with a report, on timeout, of the ids that
// had no outcome that may be acked and of the culprit's outcomes.
func (f *fixture) waitForIsolation(what string, ids []string, culprit string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(isolationTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			var missing []string
			for _, id := range ids {
				if !slices.ContainsFunc(f.seen.of(id), txinbox.Outcome.Ack) {
					missing = append(missing, id)
				}
			}
			f.t.Fatalf("%s: timed out after %v waiting for %s: not acked %v, culprit outcomes %v (outcomes %v)",
				f.h.Name, isolationTimeout, what, missing, f.seen.of(culprit), f.seen.counts())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
