package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
)

// insertEffects is the batch handler of the benchmark: one multi-row
// statement for a batch's new messages.
func insertEffects(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
	ids := make([]string, len(msgs))
	parts := make([]int32, len(msgs))
	offs := make([]int64, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
		if _, err := fmt.Sscanf(m.SourcePosition, "%d:%d", &parts[i], &offs[i]); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO effects (message_id, part, off)
		SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[])`, ids, parts, offs)
	return err
}

// BenchmarkConsume measures records/s end to end: records already in kfake
// (4 partitions), consumed by one Consumer into PostgreSQL, timed until the
// group committed every offset. A share of the records are re-sends of
// earlier ids at new offsets, skipped as duplicates by the inbox. Run with a
// fixed count, e.g. -benchtime 20000x.
func BenchmarkConsume(b *testing.B) {
	for _, handler := range []string{"handler", "batch-handler"} {
		for _, dup := range []int{0, 30} {
			b.Run(fmt.Sprintf("%s/duplicates=%d%%", handler, dup), func(b *testing.B) {
				benchConsume(b, handler == "batch-handler", dup)
			})
		}
	}
}

func benchConsume(b *testing.B, batch bool, dupPercent int) {
	const partitions = 4
	f := newFixture(b, newCluster(b), partitions)
	resend := b.N * dupPercent / 100
	unique := ids("bench", b.N-resend)
	stream := append([]string(nil), unique...)
	for i := range resend {
		stream = append(stream, unique[i*len(unique)/max(resend, 1)])
	}
	f.produce(stream, partitions)
	cfg := f.consumerConfig()
	if batch {
		cfg.Inbox.Handler, cfg.Inbox.BatchHandler = nil, insertEffects
	}
	b.ResetTimer()
	start := time.Now()
	r := f.start(cfg)
	f.waitCommitted(5 * time.Minute)
	elapsed := time.Since(start)
	b.StopTimer()
	r.stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	if st := r.c.Stats(); st.Processed != int64(len(unique)) || st.Duplicates != int64(resend) {
		b.Errorf("stats %+v: want %d processed, %d duplicates", st, len(unique), resend)
	}
}
