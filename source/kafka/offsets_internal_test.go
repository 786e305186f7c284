package kafka

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/source"
)

// checkpointsOnly is a source.Processor that has saved checkpoints and
// nothing else: watermarks reads nothing but Checkpoints.
type checkpointsOnly struct {
	source.Processor
	saved map[int32]int64
}

func (p checkpointsOnly) Checkpoints(context.Context, string) (map[int32]int64, error) {
	return p.saved, nil
}

// TestWatermarksWaitForTheClient: the assignment hook can run before Run
// stored its client (kgo joins the group as soon as NewClient made it).
// The watermarks waited for then used to fail with "no client", and the
// partitions started at Kafka's committed offsets, reading again what
// lost offset commits covered (seen under load in TestBrokerFaults and
// TestCrashBetweenCommitAndOffsetCommit).
func TestWatermarksWaitForTheClient(t *testing.T) {
	t.Parallel()
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 5 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c := &Consumer{cfg: Config{Logger: slog.New(slog.DiscardHandler)}, proc: checkpointsOnly{saved: map[int32]int64{0: 2}},
		clientSet: make(chan struct{})}
	type result struct {
		wms map[int32]int64
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		wms, err := c.watermarks(ctx, "t")
		done <- result{wms, err}
	}()
	time.Sleep(100 * time.Millisecond) // let the hook run first (a broken version fails then)
	c.client.Store(cl)
	close(c.clientSet)
	if r := <-done; r.err != nil || len(r.wms) != 1 || r.wms[0] != 2 {
		t.Errorf("watermarks called before Run stored its client: %v, %v; want partition 0 at 2", r.wms, r.err)
	}
}
