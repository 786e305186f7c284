package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
)

func newRelay(t *testing.T, s outbox.Store, cfg outbox.Config) *outbox.Relay {
	t.Helper()
	r, err := outbox.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stats(t *testing.T, s outbox.Store) outbox.Stats {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// drain runs relays side by side until no row is left unsent, or fails t
// after a minute.
func drain(t *testing.T, d *db, relays ...*outbox.Relay) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for stats(t, d.store).Unsent > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("rows left unsent after a minute: %+v", stats(t, d.store))
		}
		var wg sync.WaitGroup
		errs := make([]error, len(relays))
		for i, r := range relays {
			wg.Go(func() { _, errs[i] = r.RunOnce(context.Background()) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAddIsIdempotentAndKeepsTheFields(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		e := outbox.Entry{Scope: "s", MessageID: "m1", Part: 2, Source: "partner", Topic: "invoices", Key: "acct-7",
			ContentType: "application/json", Headers: []outbox.Header{{Key: "h", Value: "v"}}, Payload: []byte(`{"a":1}`)}
		d.add(t, e, e)
		d.add(t, e)
		if n := d.count(t, "true"); n != 1 {
			t.Fatalf("%d rows after three Adds of one entry, want 1", n)
		}
		rec := newRecorder(false)
		var got *outbox.Message
		rec.fail = func(m *outbox.Message) error { got = m; return nil }
		if n, err := newRelay(t, d.store, outbox.Config{Target: rec}).RunOnce(context.Background()); n != 1 || err != nil {
			t.Fatalf("RunOnce = %d, %v", n, err)
		}
		want := outbox.Message{ID: got.ID, Scope: "s", MessageID: "m1", Part: 2, Source: "partner", Topic: "invoices",
			Key: "acct-7", ContentType: "application/json", Headers: []outbox.Header{{Key: "h", Value: "v"}}, Payload: []byte(`{"a":1}`),
			CreatedAt: got.CreatedAt, Attempt: 1}
		if fmt.Sprint(*got) != fmt.Sprint(want) || got.StableID() != "s/m1/2" || time.Since(got.CreatedAt) > time.Hour {
			t.Errorf("sent %+v\nwant %+v", *got, want)
		}
		if r := d.text(t, "receipt", got.ID); !strings.Contains(r, "ok s/m1/2") && !strings.Contains(r, `\x6f6b`) {
			t.Errorf("receipt column %q", r)
		}
		for _, c := range []struct {
			bad  outbox.Entry
			want string
		}{{outbox.Entry{MessageID: "x"}, "Entry.Scope"}, {outbox.Entry{Scope: "s"}, "Entry.MessageID"},
			{outbox.Entry{Scope: "s", MessageID: "x", Part: -1}, "Entry.Part"}} {
			if err := d.tryAdd(c.bad); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Add(%+v) = %v, want an error naming %s", c.bad, err, c.want)
			}
		}
	})
}

func TestTwoRelaysShareTheWork(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprint("ordered=", ordered), func(t *testing.T) {
			eachDB(t, func(t *testing.T, d *db) {
				n := d.many
				d.add(t, entries(n, 20)...)
				rec := newRecorder(ordered)
				// Every 7th row fails its first send: in ordered mode it
				// holds back the rest of its key until it is sent.
				var mu sync.Mutex
				failedOnce := map[string]bool{}
				rec.fail = func(m *outbox.Message) error {
					mu.Lock()
					defer mu.Unlock()
					if m.ID%7 == 0 && !failedOnce[m.StableID()] {
						failedOnce[m.StableID()] = true
						return errors.New("flaky")
					}
					return nil
				}
				cfg := outbox.Config{Target: rec, Ordered: ordered, BatchSize: 50, Concurrency: 4,
					Backoff: func(int) time.Duration { return 0 }, Logger: discard}
				drain(t, d, newRelay(t, d.store, cfg), newRelay(t, d.open(t), cfg))
				rec.check(t, n)
				st := stats(t, d.store)
				if st.Unsent != 0 || st.Sent != int64(n) || st.Failed != 0 {
					t.Errorf("stats %+v, want %d sent and nothing else", st, n)
				}
				if got := d.count(t, "attempts = 2"); got != len(failedOnce) || got == 0 {
					t.Errorf("%d rows with 2 attempts, want %d", got, len(failedOnce))
				}
			})
		})
	}
}

func TestRetryWithBackoffThenSent(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		d.add(t, entries(1, 0)...)
		rec := newRecorder(false)
		fails := 2
		rec.fail = func(m *outbox.Message) error {
			if m.Attempt <= fails {
				return fmt.Errorf("broker down (attempt %d)", m.Attempt)
			}
			return nil
		}
		var backoffs []int
		r := newRelay(t, d.store, outbox.Config{Target: rec, Logger: discard,
			Backoff: func(a int) time.Duration { backoffs = append(backoffs, a); return time.Hour }})
		for attempt := 1; attempt <= 3; attempt++ {
			n, err := r.RunOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 0}[attempt == 3]; n != want {
				t.Fatalf("attempt %d: sent %d, want %d", attempt, n, want)
			}
			if attempt < 3 {
				// Not due for an hour: a second pass leaves it alone.
				if n, _ := r.RunOnce(context.Background()); n != 0 || rec.attempts["s/m0/0"] != attempt {
					t.Fatalf("row retried before its backoff: %d sends", rec.attempts["s/m0/0"])
				}
				st := stats(t, d.store)
				if st.Unsent != 1 || st.Retrying != 1 || d.count(t, "last_error = 'broker down (attempt "+fmt.Sprint(attempt)+")'") != 1 {
					t.Fatalf("after failure %d: stats %+v", attempt, st)
				}
				d.exec(t, "UPDATE "+d.table+" SET next_attempt_at = NULL") // the hour passes
			}
		}
		if fmt.Sprint(backoffs) != "[1 2]" || d.count(t, "attempts = 3 AND sent_at IS NOT NULL") != 1 {
			t.Errorf("backoffs %v; rows: %d sent after 3 attempts", backoffs, d.count(t, "attempts = 3 AND sent_at IS NOT NULL"))
		}
		rec.check(t, 1)
	})
}

func TestMaxAttemptsPermanentAndReplay(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		d.add(t, entries(2, 0)...) // m0 always fails, m1 is refused
		rec := newRecorder(false)
		broken := true
		rec.fail = func(m *outbox.Message) error {
			switch {
			case !broken:
				return nil
			case m.MessageID == "m1":
				return outbox.Permanent(errors.New("422 invalid invoice"))
			}
			return errors.New("503 try later")
		}
		r := newRelay(t, d.store, outbox.Config{Target: rec, MaxAttempts: 3, Logger: discard,
			Backoff: func(int) time.Duration { return 0 }})
		if n, err := r.RunOnce(context.Background()); n != 0 || err != nil {
			t.Fatalf("RunOnce = %d, %v", n, err)
		}
		if rec.attempts["s/m0/0"] != 3 || rec.attempts["s/m1/0"] != 1 {
			t.Errorf("attempts %v, want 3 for m0 and 1 for the permanent m1", rec.attempts)
		}
		failed, err := d.store.ListFailed(context.Background(), 10)
		if err != nil || len(failed) != 2 || failed[0].MessageID != "m1" || failed[0].LastError != "permanent: 422 invalid invoice" ||
			failed[1].LastError != "503 try later" || failed[1].Attempts != 3 || failed[0].FailedAt.IsZero() {
			t.Fatalf("ListFailed = %+v, %v", failed, err)
		}
		if st := stats(t, d.store); st.Failed != 2 || st.Unsent != 0 {
			t.Errorf("stats %+v", st)
		}
		broken = false
		if n, _ := r.RunOnce(context.Background()); n != 0 {
			t.Errorf("failed rows were sent without a replay")
		}
		for _, f := range failed {
			if ok, err := d.store.Replay(context.Background(), f.ID); !ok || err != nil {
				t.Fatalf("Replay(%d) = %v, %v", f.ID, ok, err)
			}
		}
		if ok, err := d.store.Replay(context.Background(), failed[0].ID); ok || err != nil {
			t.Errorf("second Replay = %v, %v; want false (no longer failed)", ok, err)
		}
		if n, err := r.RunOnce(context.Background()); n != 2 || err != nil {
			t.Fatalf("after replay RunOnce = %d, %v", n, err)
		}
		if st := stats(t, d.store); st.Failed != 0 || st.Sent != 2 || d.count(t, "attempts = 1") != 2 {
			t.Errorf("after replay: stats %+v", st)
		}
	})
}

func TestCancelFinishesInFlightSendsOnly(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		d.add(t, entries(10, 0)...)
		started, release := make(chan struct{}), make(chan struct{})
		rec := newRecorder(false)
		var once sync.Once
		rec.fail = func(m *outbox.Message) error {
			once.Do(func() { close(started) })
			<-release
			return nil
		}
		r := newRelay(t, d.store, outbox.Config{Target: rec, Concurrency: 1, BatchSize: 10, Logger: discard})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		<-started
		cancel()
		close(release) // the send in flight is confirmed after the cancel
		if err := <-done; err != nil {
			t.Fatalf("Run = %v, want nil after a cancel", err)
		}
		st := stats(t, d.store)
		if st.Sent != 1 || st.Unsent != 9 || d.count(t, "attempts = 0") != 9 || len(rec.attempts) != 1 {
			t.Errorf("after the cancel: stats %+v, sends %v; want the one in flight sent, 9 untouched", st, rec.attempts)
		}
		// The rows were released: another relay sends them at once.
		if n, err := newRelay(t, d.open(t), outbox.Config{Target: rec}).RunOnce(context.Background()); n != 9 || err != nil {
			t.Errorf("next relay sent %d, %v; want 9", n, err)
		}
	})
}

func TestConfirmedButNotRecordedIsSentAgain(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		d.add(t, entries(1, 0)...)
		rec := newRecorder(false)
		crashed, crash := d.openCrashable(t)
		// The relay "crashes" after the target confirmed: its database
		// goes away before the outcome is recorded.
		rec.fail = func(m *outbox.Message) error {
			crash()
			return nil
		}
		cfg := outbox.Config{Target: rec, SendTimeout: 50 * time.Millisecond, LeaseDuration: 200 * time.Millisecond, Logger: discard}
		if _, err := newRelay(t, crashed, cfg).RunOnce(context.Background()); err == nil {
			t.Fatal("RunOnce recorded its outcome on a closed database")
		}
		if st := stats(t, d.store); st.Sent != 0 || st.Unsent != 1 {
			t.Fatalf("after the crash: %+v", st)
		}
		rec.fail = nil
		r := newRelay(t, d.open(t), cfg)
		deadline := time.Now().Add(30 * time.Second) // SQLite: until the lease ends
		for stats(t, d.store).Sent == 0 && time.Now().Before(deadline) {
			if _, err := r.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if rec.ok["s/m0/0"] != 2 || len(rec.ok) != 1 || stats(t, d.store).Sent != 1 {
			t.Errorf("confirmed %v; want s/m0/0 twice (at least once, same stable id)", rec.ok)
		}
	})
}

func TestPurgeSentAndConfig(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		d.add(t, entries(5, 0)...)
		rec := newRecorder(false)
		rec.fail = func(m *outbox.Message) error {
			if m.MessageID == "m4" {
				return outbox.Permanent(errors.New("no"))
			}
			return nil
		}
		if _, err := newRelay(t, d.store, outbox.Config{Target: rec, Logger: discard}).RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if n, err := d.store.PurgeSent(ctx, time.Now().Add(-time.Hour), 10); n != 0 || err != nil {
			t.Errorf("purge of rows older than an hour: %d, %v", n, err)
		}
		if n, err := d.store.PurgeSent(ctx, time.Now().Add(time.Second), 3); n != 3 || err != nil {
			t.Errorf("bounded purge: %d, %v; want 3", n, err)
		}
		if n, err := d.store.PurgeSent(ctx, time.Now().Add(time.Second), 10); n != 1 || err != nil {
			t.Errorf("second purge: %d, %v; want the last sent row", n, err)
		}
		if st := stats(t, d.store); st.Failed != 1 || st.Sent != 0 || d.count(t, "true") != 1 {
			t.Errorf("after purge: %+v; the failed row must stay", st)
		}
		if _, err := d.store.PurgeSent(ctx, time.Now(), 0); err == nil || !strings.Contains(err.Error(), "limit") {
			t.Errorf("PurgeSent with limit 0: %v", err)
		}
	})
	for _, c := range []struct {
		cfg  outbox.Config
		want string
	}{
		{outbox.Config{}, "Config.Target"},
		{outbox.Config{Target: newRecorder(false), BatchSize: -1}, "Config.BatchSize"},
		{outbox.Config{Target: newRecorder(false), Concurrency: -1}, "Config.Concurrency"},
		{outbox.Config{Target: newRecorder(false), MaxAttempts: -1}, "Config.MaxAttempts"},
		{outbox.Config{Target: newRecorder(false), SendTimeout: time.Minute, LeaseDuration: time.Second}, "Config.LeaseDuration"},
	} {
		if _, err := outbox.New(&outboxlite.Store{}, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}
