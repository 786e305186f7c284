package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/txinbox/txinbox/store"
)

// nopDriver satisfies store.Driver for tests that never reach a database.
type nopDriver struct{ store.Driver[pgx.Tx] }

// faultCase is one broker fault of TestBrokerFaults.
type faultCase struct {
	name string
	// inject breaks the cluster once the consumer made progress and
	// returns the repair.
	inject func(t *testing.T, f *fixture) (repair func())
	// restart stops the consumer after the fault and starts another.
	restart bool
}

// TestBrokerFaults injects broker faults with kfake while a consumer runs:
// nothing is lost and nothing doubled, and every offset ends up committed.
func TestBrokerFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []faultCase{
		{name: "offset-commit-fails", restart: true, inject: func(t *testing.T, f *fixture) func() {
			h := f.c.fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: f.group, Count: -1})
			// The hits are awaited at the repair: the records before the
			// fault may all be committed by the time it is in place (the
			// pipelined consumer is quick), those produced after it not.
			return func() {
				waitHits(t, h, 2)
				h.Remove()
			}
		}},
		{name: "fetch-fails", inject: func(t *testing.T, f *fixture) func() {
			h := f.c.fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: f.topic, Count: 5},
				kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: f.topic, Count: 5, Err: kerr.NotLeaderForPartition})
			waitHits(t, h, 10)
			return func() {}
		}},
		{name: "fetch-connection-cut", inject: func(t *testing.T, f *fixture) func() {
			return cutConnections(t, f, kmsg.Fetch, 5)
		}},
		{name: "offset-commit-connection-cut", inject: func(t *testing.T, f *fixture) func() {
			return cutConnections(t, f, kmsg.OffsetCommit, 3)
		}},
		{name: "broker-restart", inject: func(t *testing.T, f *fixture) func() {
			node := f.c.fake.LeaderFor(f.topic, 0)
			if err := f.c.fake.RemoveNode(node); err != nil {
				t.Fatal(err)
			}
			f.c.fake.RehashCoordinators()
			return func() {
				if _, _, err := f.c.fake.AddNode(node, 0); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testFault(t, tc)
		})
	}
}

func testFault(t *testing.T, tc faultCase) {
	c := newCluster(t)
	f := newFixture(t, c, 4)
	all := ids(tc.name, 1200)
	f.produce(all[:600], 4)
	r := f.start(f.consumerConfig())
	f.waitEffects(100)
	repair := tc.inject(t, f)
	f.produce(all[600:], 4)
	if tc.restart {
		// The first consumer handles some of the records produced after
		// the fault (their offset commits fail) before it stops: only then
		// is a watermark past a committed offset, for the next consumer
		// to resume at. Under load it could stop before handling any, and
		// the next one rightly resumed nothing.
		f.waitEffects(700)
		r.stop()
		r = f.start(f.consumerConfig())
	}
	f.waitEffects(len(all))
	repair()
	f.waitCommitted(30 * time.Second)
	r.stop()
	f.checkExactlyOnce(all)
	if st := r.c.Stats(); tc.restart && (st.Resumed == 0 || st.Duplicates != 0) {
		t.Errorf("after lost offset commits: %+v, want resumed partitions and no re-read", st)
	}
}

// waitEffects waits until at least n distinct ids have an effect.
func (f *fixture) waitEffects(n int) {
	f.t.Helper()
	waitFor(f.t, 30*time.Second, fmt.Sprint(n, " effects"), func() (bool, string) {
		got := len(f.effects())
		return got >= n, fmt.Sprint(got, " effects")
	})
}

func waitHits(t *testing.T, h *kfake.FaultHandle, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Wait(ctx, n); err != nil {
		t.Fatalf("fault hit %d times, want %d: %v", h.Hits(), n, err)
	}
}

// cutConnections closes the connection of the next n requests of key with
// kfake's ControlKey (a control that answers with an error closes the
// connection, as a broker crash in the middle of a request would) and
// returns a repair that waits until all n were cut.
func cutConnections(t *testing.T, f *fixture, key kmsg.Key, n int) func() {
	var mu sync.Mutex
	cuts := 0
	f.c.fake.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		if cuts++; cuts > n {
			f.c.fake.DropControl()
			return nil, nil, false
		}
		f.c.fake.KeepControl()
		return nil, errors.New("connection cut"), true
	})
	return func() {
		waitFor(t, 30*time.Second, fmt.Sprint(n, " cut ", key), func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return cuts >= n, fmt.Sprint(cuts, " cut")
		})
	}
}

// TestDatabaseOutage cuts the consumer's database connections again and
// again while it consumes: the batches that did not commit are not acked,
// their partitions pause and fetch them again, and in the end every record
// has one effect and every offset is committed.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newCluster(t), 4)
	all := ids("outage", 1200)
	f.produce(all[:600], 4)
	r := f.start(f.consumerConfig())
	f.waitEffects(100)
	stop, done := make(chan struct{}), make(chan int)
	go func() { done <- f.cutDatabase(stop) }()
	f.produce(all[600:], 4)
	waitFor(t, 30*time.Second, "failed batches", func() (bool, string) {
		n := r.c.Stats().BatchErrors
		return n >= 3, fmt.Sprint(n, " failed batches")
	})
	close(stop)
	cuts := <-done
	f.waitCommitted(30 * time.Second)
	r.stop()
	f.checkExactlyOnce(all)
	t.Logf("%d connections cut; %+v", cuts, r.c.Stats())
}

// cutDatabase terminates the consumers' connections every 20ms until stop
// is closed, and returns how many it terminated.
func (f *fixture) cutDatabase(stop <-chan struct{}) int {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	cuts := 0
	for {
		select {
		case <-stop:
			return cuts
		case <-tick.C:
		}
		var n int
		if err := f.pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid))
			FROM pg_stat_activity WHERE application_name = $1`, f.appName()).Scan(&n); err == nil {
			cuts += n
		}
	}
}
