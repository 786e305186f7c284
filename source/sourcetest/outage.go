package sourcetest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/txinbox/txinbox"
)

// outageDown is how long the database stays unreachable in
// testDatabaseOutage: longer than the processor waits for it to answer
// after a handler lost its connection.
const outageDown = 7 * time.Second

// testDatabaseOutage loses the consumer's database twice while a handler
// runs, through no fault of any message, with MaxAttempts 1 (one counted
// attempt dead-letters): first every session of the consumer is
// terminated while the database stays up (an operator, a failover), then
// the database is unreachable for outageDown. Nothing is dead-lettered and
// every message takes effect exactly once.
func testDatabaseOutage(f *fixture) {
	app := "sourcetest-outage-" + f.db.child().Schema
	proxy := f.db.proxied(f.t, app)
	msgs, ids := messages("out", 40)
	f.publish(msgs...)
	var killed, cut sync.Once
	inbox := f.inbox(nil)
	inbox.s.maxAttempts = 1
	inbox.s.handler = func(ctx context.Context, tx txn, m *txinbox.Message) error {
		if err := tx.effect(ctx, m.ID); err != nil {
			return err
		}
		switch m.ID {
		case ids[10]:
			killed.Do(func() { f.db.terminateSessions(f.t, app) })
		case ids[25]:
			cut.Do(func() {
				proxy.SetDown(true)
				time.AfterFunc(outageDown, func() { proxy.SetDown(false) })
			})
		default:
			return nil
		}
		return tx.exec(ctx, `SELECT 1`)
	}
	f.drain(inbox, len(ids), nil)
	f.wantExactlyOnce(ids)
	for _, id := range ids {
		if got := f.seen.of(id); slices.Contains(got, txinbox.DeadLettered) {
			f.t.Errorf("%s: %s had outcomes %v", f.h.Name, id, got)
		}
	}
	dls, err := f.db.deadLetters(context.Background(), scope)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, dl := range dls {
		f.t.Errorf("%s: %s dead-lettered after an outage: %s", f.h.Name, dl.MessageID, dl.LastError)
	}
}
